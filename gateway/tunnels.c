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
	bool nested; /* a prefix inside another's: tunnels_derive then builds whole */
};

unsigned tunnels_count(const struct tunnels *t)
{
	return t->n;
}

const struct tunnel *tunnels_at(const struct tunnels *t, uint32_t i)
{
	return &t->tun[i];
}

bool tunnels_nested(const struct tunnels *t)
{
	return t->nested;
}

uint64_t tunnels_gen(const struct tunnels *t)
{
	return t->gen;
}

void tunnels_set_gen(struct tunnels *t, uint64_t gen)
{
	t->gen = gen;
}

/* The first tunnel whose name is not below name (t->n when none). */
static uint32_t tunnels_lower_bound(const struct tunnels *t, const char *name)
{
	uint32_t lo = 0, hi = t->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (strcmp(t->tun[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

uint32_t tunnels_find(const struct tunnels *t, const char *name)
{
	uint32_t i = tunnels_lower_bound(t, name);

	return i < t->n && strcmp(t->tun[i].name, name) == 0 ? i : TUNNELS_NONE;
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
static void flatten(const struct span *s, unsigned n, u128 max, struct ranges *r, bool *nested)
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
		*nested |= depth > 0;
		stack[depth++] = &s[i];
		emit(r, s[i].start, s[i].val);
	}
}

/* The span of addresses prefix p covers (of an address family of bits bits, max its largest
 * address), for val. */
static struct span prefix_span(const struct netprefix *p, unsigned bits, u128 max, uint32_t val)
{
	uint64_t a0, a1;
	u128 host = p->len >= bits ? 0 : max >> p->len;
	struct span sp;

	addr_words(p->addr.family, p->addr.bytes, &a0, &a1);
	sp.start = (p->addr.family == AF_INET6 ? (u128)a0 << 64 | a1 : a0) & ~host;
	sp.end = sp.start | host;
	sp.len = p->len;
	sp.val = val;
	return sp;
}

/*
 * The ranges of one family's prefixes into *r (which the caller frees, also after a failure):
 * -EEXIST if two tunnels have one prefix.
 */
static int build_ranges(struct tunnels *t, const struct tunnel_spec *const *order, int family,
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
			if (order[i]->prefixes[j].addr.family == family)
				s[n++] = prefix_span(&order[i]->prefixes[j], bits, max, i);
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
		flatten(s, n, max, r, &t->nested);
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

static void set_tunnel(struct tunnel *tn, const struct tunnel_spec *s, uint32_t slot)
{
	memset(tn, 0, sizeof(*tn));
	memcpy(tn->name, s->name, sizeof(tn->name));
	tn->family = s->peer.family;
	memcpy(tn->peer, s->peer.bytes, sizeof(tn->peer));
	tn->gre_flags = s->gre_flags & (GRE_F_KEY | GRE_F_SEQ | GRE_F_CSUM);
	tn->key = tn->gre_flags & GRE_F_KEY ? s->key : 0;
	tn->udp = s->udp;
	tn->slot = slot;
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
		set_tunnel(tn, s, slot);
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

/* One change derived from the table before it. */

/* Where index v of cur goes in the table after change ch of the tunnel at index at (in the
 * loops over every range and hash slot: no call, no branch on ch but the one). */
static inline __attribute__((always_inline)) uint32_t remap(uint32_t v, enum tunfile_change ch,
							    uint32_t at)
{
	if (v == at && ch != TUNFILE_ADD)
		return TUNNELS_NONE;
	if (v == TUNNELS_NONE || v < at || ch == TUNFILE_REPLACE)
		return v;
	return ch == TUNFILE_ADD ? v + 1 : v - 1;
}

static u128 range_start(const struct tunnels *t, int family, unsigned k)
{
	return family == AF_INET ? t->start4[k] : t->start6[k];
}

/* The last range of family's starting at or below a. */
static unsigned range_of(const struct tunnels *t, int family, u128 a)
{
	unsigned lo = 0, hi = family == AF_INET ? t->n4 : t->n6;

	while (hi - lo > 1) {
		unsigned mid = lo + (hi - lo) / 2;

		if (range_start(t, family, mid) <= a)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* The spans of s's prefixes of family, sorted; -EAGAIN if two overlap (the whole build says
 * why). */
static int spans_of(const struct tunnel_spec *s, int family, uint32_t val, struct span *sp,
		    unsigned *ns)
{
	unsigned bits = netaddr_len(family) * 8;
	u128 max = bits == 128 ? ~(u128)0 : ((u128)1 << bits) - 1;

	*ns = 0;
	for (unsigned j = 0; s && j < s->nprefixes; j++) {
		if (s->prefixes[j].addr.family == family)
			sp[(*ns)++] = prefix_span(&s->prefixes[j], bits, max, val);
	}
	qsort(sp, *ns, sizeof(*sp), span_cmp);
	for (unsigned i = 1; i < *ns; i++) {
		if (sp[i].start <= sp[i - 1].end)
			return -EAGAIN;
	}
	return 0;
}

/* Whether the spans meet only addresses of no tunnel, or of the tunnel at index gone. */
static bool spans_free(const struct tunnels *cur, int family, const struct span *sp, unsigned ns,
		       uint32_t gone)
{
	unsigned n = family == AF_INET ? cur->n4 : cur->n6;
	const uint32_t *val = family == AF_INET ? cur->val4 : cur->val6;

	for (unsigned i = 0; i < ns; i++) {
		for (unsigned k = range_of(cur, family, sp[i].start);
		     k < n && range_start(cur, family, k) <= sp[i].end; k++) {
			if (val[k] != TUNNELS_NONE && val[k] != gone)
				return false;
		}
	}
	return true;
}

/*
 * Family's ranges after the change, in three walks of the array: cur's copied with their
 * tunnels' indices moved as remap says; neighbours that now belong to one tunnel (the removed
 * one's ranges, now of none) joined; and the spans (disjoint, sorted, each inside a range of
 * no tunnel now: spans_free) cut into the ranges they fall in, and joined again. T is the
 * type of a start (uint32_t for IPv4, u128 for IPv6); out must have room for n + 2 ns.
 */
#define DERIVE_RANGES(NAME, T)                                                                    \
	static unsigned NAME(const T *start, const uint32_t *val, unsigned n,                     \
			     const struct span *sp, unsigned ns, enum tunfile_change ch,          \
			     uint32_t at, T max, T *ostart, uint32_t *oval)                       \
	{                                                                                         \
		unsigned m = 0;                                                                   \
                                                                                                  \
		for (unsigned k = 0; k < n; k++) {                                                \
			uint32_t v = remap(val[k], ch, at);                                       \
                                                                                                  \
			if (m && oval[m - 1] == v)                                                \
				continue;                                                         \
			ostart[m] = start[k];                                                     \
			oval[m++] = v;                                                            \
		}                                                                                 \
		for (unsigned i = 0; i < ns; i++) {                                               \
			T s = (T)sp[i].start, e = (T)sp[i].end;                                   \
			unsigned lo = 0, hi = m, k, add;                                          \
			T next;                                                                   \
                                                                                                  \
			while (hi - lo > 1) {                                                     \
				unsigned mid = lo + (hi - lo) / 2;                                \
                                                                                                  \
				if (ostart[mid] <= s)                                             \
					lo = mid;                                                 \
				else                                                              \
					hi = mid;                                                 \
			}                                                                         \
			k = lo;                                                                   \
			next = k + 1 < m ? ostart[k + 1] - 1 : max;                               \
			/* [ostart[k], next] of none becomes up to three: before, the span,     \
			 * after. */ \
			add = (s > ostart[k]) + (e < next);                                       \
			memmove(ostart + k + 1 + add, ostart + k + 1,                             \
				(m - k - 1) * sizeof(*ostart));                                   \
			memmove(oval + k + 1 + add, oval + k + 1, (m - k - 1) * sizeof(*oval));   \
			m += add;                                                                 \
			if (s > ostart[k])                                                        \
				k++;                                                              \
			ostart[k] = s;                                                            \
			oval[k] = sp[i].val;                                                      \
			if (e < next) {                                                           \
				ostart[k + 1] = e + 1;                                            \
				oval[k + 1] = TUNNELS_NONE;                                       \
			}                                                                         \
			/* A span next to one of its own tunnel's joins it. */                    \
			if (k + 1 < m && oval[k + 1] == oval[k]) {                                \
				memmove(ostart + k + 1, ostart + k + 2,                           \
					(m - k - 2) * sizeof(*ostart));                           \
				memmove(oval + k + 1, oval + k + 2, (m - k - 2) * sizeof(*oval)); \
				m--;                                                              \
			}                                                                         \
			if (k > 0 && oval[k - 1] == oval[k]) {                                    \
				memmove(ostart + k, ostart + k + 1,                               \
					(m - k - 1) * sizeof(*ostart));                           \
				memmove(oval + k, oval + k + 1, (m - k - 1) * sizeof(*oval));     \
				m--;                                                              \
			}                                                                         \
		}                                                                                 \
		return m;                                                                         \
	}

DERIVE_RANGES(derive_ranges4, uint32_t)
DERIVE_RANGES(derive_ranges6, u128)

/* Removes slot x, moving up the slots after it that may sit nearer their home (linear
 * probing's deletion: no tombstone, no lookup probes longer than before). */
static void ddelete(struct tunnels *t, struct dslot *x)
{
	uint32_t i = (uint32_t)(x - t->hash), j = i;

	for (;;) {
		struct dslot *s;
		uint32_t home;

		j = (j + 1) & t->mask;
		s = &t->hash[j];
		if (!(s->tag & DS_USED))
			break;
		home = dhash(s->a0, s->a1, s->key, s->tag) & t->mask;
		/* It stays when its home is cyclically in (i, j]. */
		if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
			continue;
		t->hash[i] = *s;
		i = j;
	}
	memset(&t->hash[i], 0, sizeof(t->hash[i]));
}

/* The hash's slot of tunnel tn (its own, or with peer, its peer's marker). */
static struct dslot tunnel_dslot(const struct tunnel *tn, uint32_t idx, bool peer)
{
	uint32_t fam = tn->family == AF_INET6 ? DS_V6 : 0;
	bool keyed = tn->gre_flags & GRE_F_KEY;
	struct dslot s = { .tag = DS_USED | fam |
				  (peer	   ? DS_PEER
				   : keyed ? DS_KEY
					   : 0),
			   .key = peer || !keyed ? 0 : tn->key,
			   .val = peer ? 1 : idx };

	addr_words(tn->family, tn->peer, &s.a0, &s.a1);
	return s;
}

/* The hash after the change: cur's copied, indices moved, the old tunnel's slot and marker
 * out, the new one's in. -EEXIST: another tunnel has the new one's peer and key. */
static int derive_hash(const struct tunnels *cur, struct tunnels *t, enum tunfile_change ch,
		       uint32_t at)
{
	struct dslot *x, *dup, s;

	t->mask = cur->mask;
	t->probe_max = cur->probe_max;
	t->hash = malloc((cur->mask + 1) * sizeof(*t->hash));
	if (!t->hash)
		return -ENOMEM;
	memcpy(t->hash, cur->hash, (cur->mask + 1) * sizeof(*t->hash));
	if (ch != TUNFILE_ADD) {
		const struct tunnel *gone = &cur->tun[at];

		s = tunnel_dslot(gone, at, false);
		ddelete(t, (struct dslot *)dfind(t, s.a0, s.a1, s.key, s.tag));
		s = tunnel_dslot(gone, 0, true);
		x = (struct dslot *)dfind(t, s.a0, s.a1, s.key, s.tag);
		if (--x->val == 0)
			ddelete(t, x);
	}
	for (uint32_t i = 0; i <= t->mask; i++) {
		if ((t->hash[i].tag & (DS_USED | DS_PEER)) == DS_USED)
			t->hash[i].val = remap(t->hash[i].val, ch, at);
	}
	if (ch == TUNFILE_REMOVE)
		return 0;
	s = tunnel_dslot(&t->tun[at], at, false);
	if (dinsert(t, &s, &dup))
		return -EEXIST;
	s = tunnel_dslot(&t->tun[at], 0, true);
	if (dinsert(t, &s, &dup))
		dup->val++;
	return 0;
}

/* Family's ranges of t after the change (derive_ranges4, derive_ranges6) into t's arrays. */
static int derive_family(const struct tunnels *cur, struct tunnels *t, int family,
			 const struct span *sp, unsigned ns, enum tunfile_change ch, uint32_t at)
{
	unsigned n = family == AF_INET ? cur->n4 : cur->n6, room = n + 2 * ns;

	if (family == AF_INET) {
		t->start4 = malloc(room * sizeof(*t->start4));
		t->val4 = malloc(room * sizeof(*t->val4));
		if (!t->start4 || !t->val4)
			return -ENOMEM;
		t->n4 = derive_ranges4(cur->start4, cur->val4, n, sp, ns, ch, at, UINT32_MAX,
				       t->start4, t->val4);
		return 0;
	}
	t->start6 = malloc(room * sizeof(*t->start6));
	t->val6 = malloc(room * sizeof(*t->val6));
	if (!t->start6 || !t->val6)
		return -ENOMEM;
	t->n6 = derive_ranges6(cur->start6, cur->val6, n, sp, ns, ch, at, ~(u128)0, t->start6,
			       t->val6);
	return 0;
}

int tunnels_derive(const struct tunnels *cur, enum tunfile_change ch, const struct tunnel_spec *s,
		   uint32_t slot, struct tunnels **out)
{
	struct span sp4[TUNNEL_PREFIXES_MAX], sp6[TUNNEL_PREFIXES_MAX];
	uint32_t at, gone = TUNNELS_NONE, n2, idx;
	unsigned ns4 = 0, ns6 = 0;
	struct tunnels *t;
	bool found;
	int rc;

	*out = NULL;
	if (!s->name[0] || !memchr(s->name, '\0', sizeof(s->name)))
		return -EINVAL;
	at = tunnels_lower_bound(cur, s->name);
	found = at < cur->n && strcmp(cur->tun[at].name, s->name) == 0;
	if (ch == TUNFILE_ADD && found)
		return -EEXIST;
	if (ch != TUNFILE_ADD && !found)
		return -ENOENT;
	if (ch == TUNFILE_ADD && cur->n >= TUNNELS_MAX)
		return -E2BIG;
	if (ch != TUNFILE_REMOVE && (!spec_ok(s) || slot >= TUNNELS_MAX))
		return -EINVAL;
	if (ch != TUNFILE_ADD) {
		gone = at;
		if (ch == TUNFILE_REPLACE)
			slot = cur->tun[at].slot;
	}
	n2 = ch == TUNFILE_ADD ? cur->n + 1 : ch == TUNFILE_REMOVE ? cur->n - 1 : cur->n;
	/* What a whole build decides: prefixes that nest (or are another's), a hash that would
	 * be more than half full. */
	if (cur->nested || (cur->mask + 1) < 4u * n2)
		return -EAGAIN;
	if (ch != TUNFILE_REMOVE) {
		if (spans_of(s, AF_INET, at, sp4, &ns4) || spans_of(s, AF_INET6, at, sp6, &ns6) ||
		    !spans_free(cur, AF_INET, sp4, ns4, gone) ||
		    !spans_free(cur, AF_INET6, sp6, ns6, gone))
			return -EAGAIN;
		if (tunnels_decap(cur, s->peer.family, s->peer.bytes, s->gre_flags & GRE_F_KEY,
				  s->gre_flags & GRE_F_KEY ? s->key : 0, &idx) == DROP_NONE &&
		    idx != gone)
			return -EEXIST;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->n = n2;
	t->tun = malloc((n2 ? n2 : 1) * sizeof(*t->tun));
	rc = t->tun ? 0 : -ENOMEM;
	if (!rc) {
		uint32_t skip = ch == TUNFILE_ADD ? 0 : 1;

		memcpy(t->tun, cur->tun, at * sizeof(*t->tun));
		memcpy(t->tun + at + (ch == TUNFILE_REMOVE ? 0 : 1), cur->tun + at + skip,
		       (cur->n - at - skip) * sizeof(*t->tun));
		if (ch != TUNFILE_REMOVE)
			set_tunnel(&t->tun[at], s, slot);
		rc = derive_family(cur, t, AF_INET, sp4, ns4, ch, at);
	}
	if (!rc)
		rc = derive_family(cur, t, AF_INET6, sp6, ns6, ch, at);
	if (!rc)
		rc = derive_hash(cur, t, ch, at);
	if (rc) {
		tunnels_free(t);
		return rc;
	}
	*out = t;
	return 0;
}
