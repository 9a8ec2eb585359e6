/*
 * The tunnel table (see tunnels.h): the inner prefixes flattened into sorted ranges, a binary
 * search per packet to encapsulate; outer sources and keys in a hash table with open
 * addressing, sized at build, to decapsulate.
 */
#include "tunnels.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "byteorder.h"
#include "gre.h"

typedef unsigned __int128 u128;

/* A slot of the decapsulation hash: an outer source and a key, or a peer marker. */
struct dslot {
	uint64_t a0, a1; /* the address: IPv4 in a0's low half, IPv6 in both */
	uint32_t key;
	uint32_t tag; /* DS_* */
	uint32_t val; /* the tunnel's index, or for a marker the number of its tunnels */
	uint32_t pad;
};

enum {
	DS_USED = 1u << 0,
	DS_V6 = 1u << 1,
	DS_KEY = 1u << 2,  /* the tunnel's packets carry a key */
	DS_PEER = 1u << 3, /* a marker: some tunnel comes from this address */
};

struct tunnels {
	uint64_t gen;
	unsigned n;
	struct tunnel *tun; /* by name */
	/*
	 * Inner destinations as ranges: start[i] is the first address of a range that reaches to
	 * start[i + 1] - 1 and belongs to tunnel val[i] (TUNNELS_NONE: none). start[0] is 0, so
	 * that every address is in a range.
	 */
	unsigned n4, n6;
	uint32_t *start4, *val4;
	u128 *start6;
	uint32_t *val6;
	struct dslot *hash;
	uint32_t mask;
	unsigned probe_max;
};

unsigned tunnels_count(const struct tunnels *t)
{
	return t->n;
}

const struct tunnel *tunnels_at(const struct tunnels *t, uint32_t i)
{
	return &t->tun[i];
}

uint64_t tunnels_gen(const struct tunnels *t)
{
	return t->gen;
}

void tunnels_set_gen(struct tunnels *t, uint64_t gen)
{
	t->gen = gen;
}

uint32_t tunnels_find(const struct tunnels *t, const char *name)
{
	uint32_t lo = 0, hi = t->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = strcmp(t->tun[mid].name, name);

		if (c == 0)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return TUNNELS_NONE;
}

void tunnels_shape(const struct tunnels *t, struct tunnels_shape *out)
{
	out->ranges4 = t->n4;
	out->ranges6 = t->n6;
	out->hash_slots = t->mask + 1;
	out->hash_probe_max = t->probe_max;
}

/* The last range starting at or below k: branch-free halving, log2(n) steps. */
uint32_t tunnels_encap(const struct tunnels *t, int family, const uint8_t *dst)
{
	unsigned n;

	if (family == AF_INET) {
		const uint32_t *base = t->start4, k = load_be32(dst);

		for (n = t->n4; n > 1; n -= n / 2)
			base = base[n / 2] <= k ? base + n / 2 : base;
		return t->val4[base - t->start4];
	}
	if (family == AF_INET6) {
		const u128 *base = t->start6;
		u128 k = (u128)load_be64(dst) << 64 | load_be64(dst + 8);

		for (n = t->n6; n > 1; n -= n / 2)
			base = base[n / 2] <= k ? base + n / 2 : base;
		return t->val6[base - t->start6];
	}
	return TUNNELS_NONE;
}

/* MurmurHash3's finaliser over the fields mixed in: the table's contents are configuration,
 * so a lookup from the wire costs at most probe_max + 1 slots whatever it asks. */
static uint32_t dhash(uint64_t a0, uint64_t a1, uint32_t key, uint32_t tag)
{
	uint64_t h = a0 * 0x9e3779b97f4a7c15ull ^ a1 * 0xc2b2ae3d27d4eb4full ^
		     ((uint64_t)key << 8 | tag) * 0x165667b19e3779f9ull;

	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return (uint32_t)h;
}

static void addr_words(int family, const uint8_t *a, uint64_t *a0, uint64_t *a1)
{
	if (family == AF_INET6) {
		*a0 = load_be64(a);
		*a1 = load_be64(a + 8);
	} else {
		*a0 = load_be32(a);
		*a1 = 0;
	}
}

static const struct dslot *dfind(const struct tunnels *t, uint64_t a0, uint64_t a1, uint32_t key,
				 uint32_t tag)
{
	uint32_t i = dhash(a0, a1, key, tag) & t->mask;

	for (unsigned probe = 0; probe <= t->probe_max; probe++, i = (i + 1) & t->mask) {
		const struct dslot *s = &t->hash[i];

		if (!(s->tag & DS_USED))
			return NULL;
		if (s->tag == tag && s->key == key && s->a0 == a0 && s->a1 == a1)
			return s;
	}
	return NULL;
}

enum drop_reason tunnels_decap(const struct tunnels *t, int family, const uint8_t *src,
			       bool has_key, uint32_t key, uint32_t *idx)
{
	uint32_t fam = family == AF_INET6 ? DS_V6 : 0;
	const struct dslot *s;
	uint64_t a0, a1;

	if (family != AF_INET && family != AF_INET6)
		return DROP_UNKNOWN_PEER;
	addr_words(family, src, &a0, &a1);
	s = dfind(t, a0, a1, has_key ? key : 0, DS_USED | fam | (has_key ? DS_KEY : 0));
	if (s) {
		*idx = s->val;
		return DROP_NONE;
	}
	return dfind(t, a0, a1, 0, DS_USED | fam | DS_PEER) ? DROP_BAD_KEY : DROP_UNKNOWN_PEER;
}

/* Inserts a slot; -EEXIST if its address, key and tag are there already (*dup then says
 * whose). */
static int dinsert(struct tunnels *t, const struct dslot *ins, struct dslot **dup)
{
	uint32_t i = dhash(ins->a0, ins->a1, ins->key, ins->tag) & t->mask;

	for (unsigned probe = 0;; probe++, i = (i + 1) & t->mask) {
		struct dslot *s = &t->hash[i];

		if (!(s->tag & DS_USED)) {
			*s = *ins;
			if (probe > t->probe_max)
				t->probe_max = probe;
			return 0;
		}
		if (s->tag == ins->tag && s->key == ins->key && s->a0 == ins->a0 &&
		    s->a1 == ins->a1) {
			*dup = s;
			return -EEXIST;
		}
	}
}

static int build_hash(struct tunnels *t)
{
	uint32_t size = 8;
	struct dslot *dup;
	int rc;

	/* Each tunnel and at most as many peer markers, at most half full: a miss meets a free
	 * slot within a probe or two on average. */
	while (size < 4u * t->n)
		size *= 2;
	t->hash = calloc(size, sizeof(*t->hash));
	if (!t->hash)
		return -ENOMEM;
	t->mask = size - 1;
	for (uint32_t i = 0; i < t->n; i++) {
		const struct tunnel *tn = &t->tun[i];
		uint32_t fam = tn->family == AF_INET6 ? DS_V6 : 0;
		bool keyed = tn->gre_flags & GRE_F_KEY;
		struct dslot s = { .tag = DS_USED | fam | (keyed ? DS_KEY : 0),
				   .key = keyed ? tn->key : 0,
				   .val = i };

		addr_words(tn->family, tn->peer, &s.a0, &s.a1);
		rc = dinsert(t, &s, &dup);
		if (rc)
			return rc;
		s.tag = DS_USED | fam | DS_PEER;
		s.key = 0;
		s.val = 1;
		if (dinsert(t, &s, &dup))
			dup->val++;
	}
	return 0;
}

/* A prefix to flatten. */
struct span {
	u128 start, end;
	unsigned len;
	uint32_t val;
};

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->len < y->len ? -1 : x->len > y->len;
}

/* The flattened ranges being written. */
struct ranges {
	u128 *start;
	uint32_t *val;
	unsigned n;
};

/* A range from pos on belongs to val: replaces one that would be empty, joins an equal one. */
static void emit(struct ranges *r, u128 pos, uint32_t val)
{
	if (r->n && r->start[r->n - 1] == pos) {
		r->val[r->n - 1] = val;
		if (r->n >= 2 && r->val[r->n - 2] == val)
			r->n--;
		return;
	}
	if (r->n && r->val[r->n - 1] == val)
		return;
	r->start[r->n] = pos;
	r->val[r->n++] = val;
}

/*
 * Flattens n spans (sorted by span_cmp, none equal) into ranges, each address in the range of
 * the longest span that holds it: a sweep with the spans that hold the current address on a
 * stack, the innermost on top. r must have room for 2n + 1 ranges.
 */
static void flatten(const struct span *s, unsigned n, u128 max, struct ranges *r)
{
	const struct span *stack[129];
	unsigned depth = 0;

	r->n = 0;
	emit(r, 0, TUNNELS_NONE);
	for (unsigned i = 0; i <= n; i++) {
		/* The spans that end before this one starts (all of them after the last) close,
		 * and the one under each takes over after its end. */
		while (depth && (i == n || stack[depth - 1]->end < s[i].start)) {
			const struct span *top = stack[--depth];

			if (top->end != max)
				emit(r, top->end + 1, depth ? stack[depth - 1]->val : TUNNELS_NONE);
		}
		if (i == n)
			break;
		stack[depth++] = &s[i];
		emit(r, s[i].start, s[i].val);
	}
}

/*
 * The ranges of one family's prefixes into *r (which the caller frees, also after a failure):
 * -EEXIST if two tunnels have one prefix.
 */
static int build_ranges(const struct tunnels *t, const struct tunnel_spec *const *order, int family,
			struct ranges *r)
{
	unsigned bits = netaddr_len(family) * 8, n = 0;
	u128 max = bits == 128 ? ~(u128)0 : ((u128)1 << bits) - 1;
	struct span *s;
	int rc = 0;

	for (uint32_t i = 0; i < t->n; i++) {
		for (unsigned j = 0; j < order[i]->nprefixes; j++)
			n += order[i]->prefixes[j].addr.family == family;
	}
	s = malloc((n ? n : 1) * sizeof(*s));
	r->start = malloc((2 * n + 1) * sizeof(*r->start));
	r->val = malloc((2 * n + 1) * sizeof(*r->val));
	if (!s || !r->start || !r->val) {
		free(s);
		return -ENOMEM;
	}
	n = 0;
	for (uint32_t i = 0; i < t->n; i++) {
		for (unsigned j = 0; j < order[i]->nprefixes; j++) {
			const struct netprefix *p = &order[i]->prefixes[j];
			uint64_t a0, a1;
			u128 host;

			if (p->addr.family != family)
				continue;
			addr_words(family, p->addr.bytes, &a0, &a1);
			host = p->len >= bits ? 0 : max >> p->len;
			s[n].start = (family == AF_INET6 ? (u128)a0 << 64 | a1 : a0) & ~host;
			s[n].end = s[n].start | host;
			s[n].len = p->len;
			s[n++].val = i;
		}
	}
	/* Tunnels named in the order of their prefixes (as the bed's) come sorted. */
	for (unsigned i = 1; i < n; i++) {
		if (span_cmp(&s[i - 1], &s[i]) > 0) {
			qsort(s, n, sizeof(*s), span_cmp);
			break;
		}
	}
	for (unsigned i = 1; i < n && !rc; i++) {
		if (s[i].start == s[i - 1].start && s[i].len == s[i - 1].len)
			rc = -EEXIST;
	}
	if (!rc)
		flatten(s, n, max, r);
	free(s);
	return rc;
}

static int spec_name_cmp(const void *a, const void *b)
{
	const struct tunnel_spec *const *x = a, *const *y = b;

	return strcmp((*x)->name, (*y)->name);
}

static bool spec_ok(const struct tunnel_spec *s)
{
	int fam = s->peer.family;

	if ((fam != AF_INET && fam != AF_INET6) || !s->name[0] ||
	    !memchr(s->name, '\0', sizeof(s->name)) || s->nprefixes > TUNNEL_PREFIXES_MAX)
		return false;
	for (unsigned j = 0; j < s->nprefixes; j++) {
		const struct netprefix *p = &s->prefixes[j];

		if ((p->addr.family != AF_INET && p->addr.family != AF_INET6) ||
		    p->len > netaddr_len(p->addr.family) * 8)
			return false;
	}
	return true;
}

void tunnels_free(struct tunnels *t)
{
	if (!t)
		return;
	free(t->tun);
	free(t->start4);
	free(t->val4);
	free(t->start6);
	free(t->val6);
	free(t->hash);
	free(t);
}

/* Fills the tunnels in name order; the slots must be in range and distinct. */
static int fill(struct tunnels *t, const struct tunnel_spec *const *order, const uint32_t *slots)
{
	uint8_t taken[TUNNELS_MAX / 8] = { 0 };

	for (uint32_t i = 0; i < t->n; i++) {
		const struct tunnel_spec *s = order[i];
		struct tunnel *tn = &t->tun[i];
		uint32_t slot = slots[i];

		if (slot >= TUNNELS_MAX || (taken[slot / 8] & (1u << slot % 8)))
			return -EINVAL;
		taken[slot / 8] |= (uint8_t)(1u << slot % 8);
		memset(tn, 0, sizeof(*tn));
		memcpy(tn->name, s->name, sizeof(tn->name));
		tn->family = s->peer.family;
		memcpy(tn->peer, s->peer.bytes, sizeof(tn->peer));
		tn->gre_flags = s->gre_flags & (GRE_F_KEY | GRE_F_SEQ | GRE_F_CSUM);
		tn->key = tn->gre_flags & GRE_F_KEY ? s->key : 0;
		tn->udp = s->udp;
		tn->slot = slot;
	}
	return 0;
}

bool tunnels_names_ok(const struct tunnel_spec *specs, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (!specs[i].name[0] || !memchr(specs[i].name, '\0', sizeof(specs[i].name)))
			return false;
	}
	return true;
}

void tunnels_sort_names(const struct tunnel_spec **order, unsigned n)
{
	for (unsigned i = 1; i < n; i++) {
		if (strcmp(order[i - 1]->name, order[i]->name) > 0) {
			qsort(order, n, sizeof(*order), spec_name_cmp);
			return;
		}
	}
}

int tunnels_build_sorted(const struct tunnel_spec *const *order, unsigned n, const uint32_t *slots,
			 struct tunnels **out)
{
	struct ranges r4 = { 0 }, r6 = { 0 };
	struct tunnels *t;
	int rc;

	*out = NULL;
	if (n > TUNNELS_MAX)
		return -E2BIG;
	for (unsigned i = 0; i < n; i++) {
		if (!spec_ok(order[i]))
			return -EINVAL;
		if (i && strcmp(order[i - 1]->name, order[i]->name) >= 0)
			return strcmp(order[i - 1]->name, order[i]->name) ? -EINVAL : -EEXIST;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->n = n;
	t->tun = malloc((n ? n : 1) * sizeof(*t->tun));
	rc = t->tun ? fill(t, order, slots) : -ENOMEM;
	if (!rc)
		rc = build_ranges(t, order, AF_INET, &r4);
	if (!rc)
		rc = build_ranges(t, order, AF_INET6, &r6);
	/* The table owns the ranges from here; IPv4's starts narrow to 32 bits. */
	t->val4 = r4.val;
	t->n4 = r4.n;
	t->start6 = r6.start;
	t->val6 = r6.val;
	t->n6 = r6.n;
	if (!rc) {
		t->start4 = malloc((r4.n ? r4.n : 1) * sizeof(*t->start4));
		if (!t->start4)
			rc = -ENOMEM;
		for (unsigned i = 0; t->start4 && i < r4.n; i++)
			t->start4[i] = (uint32_t)r4.start[i];
	}
	free(r4.start);
	if (!rc)
		rc = build_hash(t);
	if (rc) {
		tunnels_free(t);
		return rc;
	}
	*out = t;
	return 0;
}

int tunnels_build(const struct tunnel_spec *specs, unsigned n, const uint32_t *slots,
		  struct tunnels **out)
{
	const struct tunnel_spec **order;
	uint32_t *in_order;
	int rc;

	*out = NULL;
	if (n > TUNNELS_MAX)
		return -E2BIG;
	if (!tunnels_names_ok(specs, n))
		return -EINVAL;
	order = malloc((n ? n : 1) * sizeof(*order));
	in_order = malloc((n ? n : 1) * sizeof(*in_order));
	if (!order || !in_order) {
		free(order);
		free(in_order);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < n; i++)
		order[i] = &specs[i];
	tunnels_sort_names(order, n);
	for (unsigned i = 0; i < n; i++)
		in_order[i] = slots ? slots[order[i] - specs] : (uint32_t)(order[i] - specs);
	rc = tunnels_build_sorted(order, n, in_order, out);
	free(order);
	free(in_order);
	return rc;
}
