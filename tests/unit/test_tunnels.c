/*
 * The tunnel table (gateway/tunnels.h) and its publication (gateway/tunnels_pub.h): lookups by
 * inner destination (longest prefix) and by outer source and key, in rows; what a table
 * refuses; the 10,000 tunnels of the bed; a random table against a brute-force longest match;
 * slots and counters across replaces; a table held by a worker's pass, and the generation in
 * effect (tunnels_pub_settled) and the worker that holds it back; and a reader beside a
 * writer that sees only whole tables (under ASan a table freed too early is a use after free).
 * With --lookups N it only looks up in a table of the bed's first N tunnels, and then changes
 * one of them ten times with the whole list, and replaces, removes and adds back ten of them
 * each derived from the table in force, for callgrind to count instructions (docs/gregw.md).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gre.h"
#include "tunnels.h"
#include "tunnels_pub.h"

static struct tunnel_spec spec(const char *name, const char *peer, long long key,
			       const char *prefixes)
{
	struct tunnel_spec s;
	char buf[512], *tok, *save = NULL;

	memset(&s, 0, sizeof(s));
	snprintf(s.name, sizeof(s.name), "%s", name);
	if (netaddr_parse(peer, &s.peer))
		abort();
	if (key >= 0) {
		s.gre_flags |= GRE_F_KEY;
		s.key = (uint32_t)key;
	}
	snprintf(buf, sizeof(buf), "%s", prefixes);
	for (tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		if (netaddr_parse_prefix(tok, &s.prefixes[s.nprefixes++]))
			abort();
	}
	return s;
}

static struct netaddr addr(const char *text)
{
	struct netaddr a;

	if (netaddr_parse(text, &a))
		abort();
	return a;
}

/* The name of the tunnel dst goes into, or "-". */
static const char *encap_name(const struct tunnels *t, const char *dst)
{
	struct netaddr a = addr(dst);
	uint32_t i = tunnels_encap(t, a.family, a.bytes);

	return i == TUNNELS_NONE ? "-" : tunnels_at(t, i)->name;
}

static const struct tunnel_spec *nested_specs(unsigned *n)
{
	static struct tunnel_spec s[6];

	s[0] = spec("wide", "198.18.0.2", 1, "198.18.0.0/15");
	s[1] = spec("site", "198.18.0.2", 2, "198.18.64.0/18");
	s[2] = spec("host", "198.18.0.2", 3, "198.18.64.5/32");
	s[3] = spec("six", "2001:2::2", 4, "2001:2::/48");
	s[4] = spec("six64", "2001:2::2", 5, "2001:2:0:4000::/64 198.18.200.0/24");
	s[5] = spec("nokey", "198.18.0.3", -1, "198.19.200.0/24 2001:2:0:4000:1::/80");
	*n = 6;
	return s;
}

static void test_encap(void)
{
	static const struct {
		const char *dst, *want;
	} rows[] = {
		{ "198.18.64.5", "host" },	   /* the longest of three */
		{ "198.18.64.4", "site" },	   /* one below it */
		{ "198.18.64.6", "site" },	   /* one above it */
		{ "198.18.64.0", "site" },	   /* the site's first */
		{ "198.18.127.255", "site" },	   /* and last */
		{ "198.18.128.0", "wide" },	   /* one past the site */
		{ "198.18.63.255", "wide" },	   /* one before it */
		{ "198.18.0.0", "wide" },	   /* the widest's first */
		{ "198.19.255.255", "wide" },	   /* and last */
		{ "198.19.200.7", "nokey" },	   /* inside wide, a tunnel without a key */
		{ "198.18.200.1", "six64" },	   /* a tunnel's IPv4 prefix beside its IPv6 one */
		{ "198.20.0.0", "-" },		   /* past every prefix */
		{ "198.17.255.255", "-" },	   /* before every prefix */
		{ "0.0.0.0", "-" },		   /* the first address */
		{ "255.255.255.255", "-" },	   /* the last */
		{ "2001:2:0:4000::1", "six64" },   /* a /64 in a /48 */
		{ "2001:2:0:4000:1::9", "nokey" }, /* a /80 in that /64 */
		{ "2001:2:0:4000:2::", "six64" },  /* just past the /80 */
		{ "2001:2:0:4001::", "six" },
		{ "2001:2:0:ffff:ffff:ffff:ffff:ffff", "six" }, /* the /48's last */
		{ "2001:2:1::", "-" },				/* one past it */
		{ "2001:2::", "six" },				/* and first */
		{ "2001:3::", "-" },
		{ "2001:1:ffff:ffff:ffff:ffff:ffff:ffff", "-" },
		{ "::", "-" },
		{ "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "-" },
	};
	struct tunnels *t;
	unsigned n;
	const struct tunnel_spec *s = nested_specs(&n);

	printf("case: encapsulation by the longest prefix, IPv4 and IPv6\n");
	CHECK_INT(tunnels_build(s, n, NULL, &t), 0);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		CHECK_ROW(strcmp(encap_name(t, rows[i].dst), rows[i].want) == 0, rows[i].dst);
	CHECK_INT(tunnels_encap(t, AF_UNSPEC, (const uint8_t *)"\0\0\0\0"), TUNNELS_NONE);
	tunnels_free(t);

	printf("case: prefixes of every address (/0) and single hosts at the ends\n");
	{
		struct tunnel_spec all[2] = {
			spec("all", "198.18.0.2", 1, "0.0.0.0/0 ::/0"),
			spec("ends", "198.18.0.2", 2,
			     "0.0.0.0/32 255.255.255.255/32 ::/128 "
			     "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128"),
		};

		CHECK_INT(tunnels_build(all, 2, NULL, &t), 0);
		CHECK_STR(encap_name(t, "0.0.0.0"), "ends");
		CHECK_STR(encap_name(t, "0.0.0.1"), "all");
		CHECK_STR(encap_name(t, "255.255.255.254"), "all");
		CHECK_STR(encap_name(t, "255.255.255.255"), "ends");
		CHECK_STR(encap_name(t, "::"), "ends");
		CHECK_STR(encap_name(t, "::1"), "all");
		CHECK_STR(encap_name(t, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe"), "all");
		CHECK_STR(encap_name(t, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), "ends");
		tunnels_free(t);
	}
}

static void test_decap(void)
{
	static const struct {
		const char *row, *src;
		long long key; /* -1: none */
		enum drop_reason want;
		const char *tunnel;
	} rows[] = {
		{ "peer and key", "198.18.0.2", 2, DROP_NONE, "site" },
		{ "another key of the peer", "198.18.0.2", 3, DROP_NONE, "host" },
		{ "key mismatch", "198.18.0.2", 99, DROP_BAD_KEY, NULL },
		{ "key missing", "198.18.0.2", -1, DROP_BAD_KEY, NULL },
		{ "keyless tunnel", "198.18.0.3", -1, DROP_NONE, "nokey" },
		{ "key where none is set", "198.18.0.3", 1, DROP_BAD_KEY, NULL },
		{ "key 0 is a key", "198.18.0.3", 0, DROP_BAD_KEY, NULL },
		{ "unknown peer", "198.18.0.9", 1, DROP_UNKNOWN_PEER, NULL },
		{ "unknown peer, no key", "198.18.0.9", -1, DROP_UNKNOWN_PEER, NULL },
		{ "IPv6 peer and key", "2001:2::2", 5, DROP_NONE, "six64" },
		{ "IPv6 key mismatch", "2001:2::2", 1, DROP_BAD_KEY, NULL },
		{ "IPv6 unknown peer", "2001:2::9", 4, DROP_UNKNOWN_PEER, NULL },
		{ "an IPv4 peer's bytes in IPv6", "::c612:2", 2, DROP_UNKNOWN_PEER, NULL },
	};
	struct tunnels *t;
	unsigned n;
	const struct tunnel_spec *s = nested_specs(&n);

	printf("case: decapsulation by outer source and key\n");
	CHECK_INT(tunnels_build(s, n, NULL, &t), 0);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct netaddr a = addr(rows[i].src);
		uint32_t idx = TUNNELS_NONE;
		enum drop_reason r =
			tunnels_decap(t, a.family, a.bytes, rows[i].key >= 0,
				      rows[i].key >= 0 ? (uint32_t)rows[i].key : 0, &idx);

		CHECK_ROW(r == rows[i].want, rows[i].row);
		if (rows[i].tunnel)
			CHECK_ROW(idx != TUNNELS_NONE &&
					  strcmp(tunnels_at(t, idx)->name, rows[i].tunnel) == 0,
				  rows[i].row);
	}
	{
		uint32_t idx;

		CHECK_INT(tunnels_decap(t, AF_UNSPEC, (const uint8_t *)"\0\0\0\0", false, 0, &idx),
			  DROP_UNKNOWN_PEER);
	}
	tunnels_free(t);
}

static void test_refusals(void)
{
	struct tunnel_spec s[3];
	uint32_t slots[2];
	struct tunnels *t = (struct tunnels *)&s; /* set to NULL by every refusal */

	printf("case: what a table refuses\n");
	s[0] = spec("a", "198.18.0.2", 1, "198.18.64.0/24");
	s[1] = spec("a", "198.18.0.2", 2, "198.18.65.0/24");
	CHECK_INT(tunnels_build(s, 2, NULL, &t), -EEXIST); /* one name twice */
	CHECK(t == NULL);
	s[1] = spec("b", "198.18.0.2", 1, "198.18.65.0/24");
	CHECK_INT(tunnels_build(s, 2, NULL, &t), -EEXIST); /* one peer and key */
	s[0] = spec("a", "198.18.0.2", -1, "198.18.64.0/24");
	s[1] = spec("b", "198.18.0.2", -1, "198.18.65.0/24");
	CHECK_INT(tunnels_build(s, 2, NULL, &t), -EEXIST); /* one peer, both without a key */
	s[1] = spec("b", "2001:2::2", -1, "198.18.65.0/24");
	CHECK_INT(tunnels_build(s, 2, NULL, &t), 0); /* the same without a key, other peers */
	tunnels_free(t);
	s[1] = spec("b", "198.18.0.2", 7, "198.18.64.0/24");
	CHECK_INT(tunnels_build(s, 2, NULL, &t), -EEXIST); /* one prefix on two */
	s[1] = spec("b", "198.18.0.2", 7, "2001:2::/64 2001:2::/64");
	CHECK_INT(tunnels_build(s, 2, NULL, &t), -EEXIST); /* twice on one */
	s[1] = spec("b", "198.18.0.2", 7, "198.18.64.0/25 198.18.64.0/26");
	CHECK_INT(tunnels_build(s, 2, NULL, &t), 0); /* nested: the longest decides */
	tunnels_free(t);
	slots[0] = 3;
	slots[1] = 3;
	CHECK_INT(tunnels_build(s, 2, slots, &t), -EINVAL); /* one slot twice */
	slots[1] = TUNNELS_MAX;
	CHECK_INT(tunnels_build(s, 2, slots, &t), -EINVAL); /* a slot out of range */
	s[1].prefixes[0].len = 33;
	CHECK_INT(tunnels_build(s, 2, NULL, &t), -EINVAL);
	s[1] = spec("b", "198.18.0.2", 7, "198.18.64.0/25");
	s[1].peer.family = 0;
	CHECK_INT(tunnels_build(s, 2, NULL, &t), -EINVAL);
	s[1].name[0] = '\0';
	s[1].peer.family = AF_INET;
	CHECK_INT(tunnels_build(s, 2, NULL, &t), -EINVAL);
	CHECK_INT(tunnels_build(s, TUNNELS_MAX + 1, NULL, &t), -E2BIG);
}

/* Tunnel i of gwa on the bed (topo/tunnels.sh): the server side's prefixes, key i + 1. */
static struct tunnel_spec bed_spec(unsigned i)
{
	struct tunnel_spec s;
	char name[16], pfx[128];

	snprintf(name, sizeof(name), "t%05u", i);
	snprintf(pfx, sizeof(pfx), "198.18.%u.%u/32 2001:2:0:%x::/64", 128 + i / 256, i % 256,
		 0x8000 + i);
	s = spec(name, "198.18.0.2", i + 1, pfx);
	return s;
}

enum { BED = 10000 };

static void test_bed(void)
{
	struct tunnel_spec *s = malloc(BED * sizeof(*s));
	struct tunnels_shape shape;
	unsigned wrong = 0, wrong6 = 0, wrong_decap = 0, outside = 0;
	struct tunnels *t;
	uint8_t a[16];

	printf("case: the bed's 10,000 tunnels, every one looked up both ways\n");
	for (unsigned i = 0; i < BED; i++)
		s[i] = bed_spec(i);
	CHECK_INT(tunnels_build(s, BED, NULL, &t), 0);
	CHECK_INT(tunnels_count(t), BED);
	for (unsigned i = 0; i < BED; i++) {
		uint32_t idx = TUNNELS_NONE;

		memcpy(a, s[i].prefixes[0].addr.bytes, 4);
		wrong += tunnels_encap(t, AF_INET, a) != i; /* names in order: index i */
		memcpy(a, s[i].prefixes[1].addr.bytes, 16);
		a[15] = 2;
		wrong6 += tunnels_encap(t, AF_INET6, a) != i;
		wrong_decap += tunnels_decap(t, AF_INET, s[i].peer.bytes, true, i + 1, &idx) !=
				       DROP_NONE ||
			       idx != i;
	}
	/* Past the last tunnel, in the pool. */
	for (unsigned i = BED; i < TUNNELS_MAX; i++) {
		a[0] = 198;
		a[1] = 18;
		a[2] = (uint8_t)(128 + i / 256);
		a[3] = (uint8_t)(i % 256);
		outside += tunnels_encap(t, AF_INET, a) != TUNNELS_NONE;
	}
	CHECK_INT(wrong, 0);
	CHECK_INT(wrong6, 0);
	CHECK_INT(wrong_decap, 0);
	CHECK_INT(outside, 0);
	tunnels_shape(t, &shape);
	/* Consecutive prefixes: a range each, one before the first and one after the last. */
	CHECK_INT(shape.ranges4, BED + 2);
	CHECK_INT(shape.ranges6, BED + 2);
	CHECK(shape.hash_slots >= 2 * (BED + 1));
	printf("  ranges %u + %u, hash %u slots, longest probe %u\n", shape.ranges4, shape.ranges6,
	       shape.hash_slots, shape.hash_probe_max + 1);
	CHECK(shape.hash_probe_max < 16);
	tunnels_free(t);
	free(s);
}

/* xorshift64: the same tables every run. */
static uint64_t rnd_state = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* The longest prefix holding a, by trying every one. */
static uint32_t brute(const struct tunnel_spec *s, unsigned n, const struct tunnels *t,
		      const struct netaddr *a)
{
	unsigned best_len = 0;
	uint32_t best = TUNNELS_NONE;

	for (unsigned i = 0; i < n; i++) {
		for (unsigned j = 0; j < s[i].nprefixes; j++) {
			const struct netprefix *p = &s[i].prefixes[j];

			if (netaddr_in_prefix(a, p) &&
			    (best == TUNNELS_NONE || p->len > best_len)) {
				best = tunnels_find(t, s[i].name);
				best_len = p->len;
			}
		}
	}
	return best;
}

/* A random prefix of the family within its benchmarking range, host bits cleared. */
static struct netprefix random_prefix(int family)
{
	struct netprefix p;
	unsigned bits = family == AF_INET ? 32 : 128, lo = family == AF_INET ? 15 : 48;

	memset(&p, 0, sizeof(p));
	p.addr.family = family;
	for (unsigned i = 0; i < 16; i++)
		p.addr.bytes[i] = (uint8_t)rnd();
	if (family == AF_INET) {
		p.addr.bytes[0] = 198;
		p.addr.bytes[1] = 18 | (p.addr.bytes[1] & 1);
	} else {
		memcpy(p.addr.bytes, "\x20\x01\x00\x02\x00\x00", 6);
	}
	/* Short prefixes are few, or every address would be in the same few. */
	p.len = lo + (unsigned)(rnd() % (bits - lo + 1));
	if (rnd() % 4)
		p.len = bits - (unsigned)(rnd() % 9);
	for (unsigned b = p.len; b < bits; b++)
		p.addr.bytes[b / 8] &= (uint8_t) ~(0x80 >> (b % 8));
	return p;
}

enum { RANDOM_TUNNELS = 400, RANDOM_LOOKUPS = 40000 };

static void test_random(void)
{
	struct tunnel_spec *s = calloc(RANDOM_TUNNELS, sizeof(*s));
	unsigned wrong = 0, inside = 0, outside, n = 0;
	struct tunnels *t;

	printf("case: %d random tunnels, nested prefixes, against a brute-force match\n",
	       RANDOM_TUNNELS);
	while (n < RANDOM_TUNNELS) {
		struct tunnel_spec *x = &s[n];
		bool dup = false;

		memset(x, 0, sizeof(*x));
		snprintf(x->name, sizeof(x->name), "r%u", n);
		x->peer = addr("198.18.0.2");
		x->gre_flags = GRE_F_KEY;
		x->key = n;
		x->nprefixes = 1 + (unsigned)(rnd() % 3);
		for (unsigned j = 0; j < x->nprefixes; j++)
			x->prefixes[j] = random_prefix(rnd() % 2 ? AF_INET : AF_INET6);
		/* A prefix twice is refused (test_refusals); draw again. */
		for (unsigned i = 0; i <= n && !dup; i++) {
			for (unsigned j = 0; j < s[i].nprefixes; j++) {
				for (unsigned k = 0; k < x->nprefixes; k++) {
					if ((i != n || j != k) &&
					    s[i].prefixes[j].len == x->prefixes[k].len &&
					    netaddr_equal(&s[i].prefixes[j].addr,
							  &x->prefixes[k].addr))
						dup = true;
				}
			}
		}
		n += !dup;
	}
	CHECK_INT(tunnels_build(s, n, NULL, &t), 0);
	for (unsigned i = 0; i < RANDOM_LOOKUPS; i++) {
		/* Half near a prefix (its first, its last, or inside), half anywhere. */
		const struct tunnel_spec *x = &s[rnd() % n];
		struct netprefix p = x->prefixes[rnd() % x->nprefixes];
		struct netaddr a = p.addr;
		unsigned bits = netaddr_len(a.family) * 8, how = (unsigned)(rnd() % 4);

		for (unsigned b = p.len; b < bits; b++) {
			bool one = how == 0 ? false : how == 1 ? true : rnd() & 1;

			if (one)
				a.bytes[b / 8] |= (uint8_t)(0x80 >> (b % 8));
		}
		if (how == 3) {
			for (unsigned k = 0; k < 16; k++)
				a.bytes[k] = (uint8_t)rnd();
		}
		if (i % 2 && how < 2) {
			/* One beyond the end, or before the start. */
			for (int k = (int)netaddr_len(a.family) - 1; k >= 0; k--) {
				if (how == 1 ? ++a.bytes[k] != 0 : a.bytes[k]-- != 0)
					break;
			}
		}
		{
			uint32_t want = brute(s, n, t, &a);

			inside += want != TUNNELS_NONE;
			wrong += tunnels_encap(t, a.family, a.bytes) != want;
		}
	}
	CHECK_INT(wrong, 0);
	/* Both hits and misses, in numbers. */
	outside = RANDOM_LOOKUPS - inside;
	CHECK(inside > RANDOM_LOOKUPS / 2);
	CHECK(outside > RANDOM_LOOKUPS / 10);
	printf("  %u lookups, %u inside a prefix\n", RANDOM_LOOKUPS, inside);
	tunnels_free(t);
	free(s);
}

static void test_drops(void)
{
	printf("case: per-tunnel drop reasons\n");
	for (unsigned i = 0; i < TUNNEL_DROPS; i++)
		CHECK_INT(tunnels_drop_index(tunnels_drop_reason(i)), i);
	/* Before the lookup there is no tunnel to count in. */
	CHECK_INT(tunnels_drop_index(DROP_UNKNOWN_PEER), -1);
	CHECK_INT(tunnels_drop_index(DROP_BAD_KEY), -1);
	CHECK_INT(tunnels_drop_index(DROP_TRUNCATED), -1);
	CHECK_INT(tunnels_drop_index(DROP_TX_BAD_INNER), -1);
	CHECK_INT(sizeof(struct tunnel_stats), 128);
	CHECK_INT(sizeof(struct seq_window), 128); /* docs/gregw.md: a window a worker and slot */
}

static uint32_t slot_of(const struct tunnels_pub *p, const char *name)
{
	const struct tunnels *t = tunnels_pub_current(p);
	uint32_t i = tunnels_find(t, name);

	return i == TUNNELS_NONE ? TUNNELS_NONE : tunnels_at(t, i)->slot;
}

/* Whether slot's windows say the numbers lowest to highest with lost never received. */
static bool seq_span(const struct tunnels_pub *p, uint32_t slot, uint32_t lowest, uint32_t highest,
		     uint64_t lost)
{
	struct seq_summary sq;

	tunnels_pub_seq(p, slot, &sq);
	if (!sq.any || sq.lowest != lowest || sq.highest != highest || sq.lost != lost) {
		fprintf(stderr, "  slot %u: any %d, %u to %u, %llu lost\n", slot, sq.any, sq.lowest,
			sq.highest, (unsigned long long)sq.lost);
		return false;
	}
	return true;
}

static void test_publication(void)
{
	static struct tunnels_pub p;
	struct tunnel_spec s[3];
	const struct tunnels *held;
	struct tunnel_stats sum;
	uint32_t slot_a, slot_b, seq;

	printf("case: publication: a replace keeps a tunnel's slot, counters and numbers\n");
	CHECK_INT(tunnels_pub_init(&p, 2), 0);
	CHECK_INT(tunnels_count(tunnels_pub_current(&p)), 0);
	s[0] = spec("a", "198.18.0.2", 1, "198.18.64.0/24");
	s[1] = spec("b", "198.18.0.2", 2, "198.18.65.0/24");
	CHECK_INT(tunnels_pub_set(&p, s, 2), 0);
	slot_a = slot_of(&p, "a");
	slot_b = slot_of(&p, "b");
	CHECK(slot_a != slot_b);
	held = tunnels_enter(&p, 0);
	CHECK_INT(tunnels_gen(held), 2);
	{
		const struct tunnel *a = tunnels_at(held, tunnels_find(held, "a"));

		tunnels_stat_add(tunnels_stats(&p, 0, a), TUNNEL_TX_PACKETS, 5);
		tunnels_stat_drop(tunnels_stats(&p, 0, a), DROP_TX_TOO_BIG);
		tunnels_stat_drop(tunnels_stats(&p, 0, a), DROP_BAD_KEY); /* not a tunnel's */
		seq = tunnels_seq_take(&p, a, 10);
		CHECK_U64(seq, 0);
	}
	tunnels_leave(&p, 0);
	held = tunnels_enter(&p, 1);
	tunnels_stat_add(tunnels_stats(&p, 1, tunnels_at(held, tunnels_find(held, "a"))),
			 TUNNEL_TX_PACKETS, 2);
	tunnels_leave(&p, 1);
	/* Receive windows by tunnel: the numbers of a and of b, far apart, interleaved across
	 * both workers, each in its tunnel's windows: none out of a window, each tunnel's span
	 * its own. */
	{
		static struct worker_stats ws[2];
		struct seq_window *wa, *wb;

		held = tunnels_enter(&p, 0);
		wa = tunnels_seq_windows(&p, tunnels_at(held, tunnels_find(held, "a")));
		wb = tunnels_seq_windows(&p, tunnels_at(held, tunnels_find(held, "b")));
		for (uint32_t i = 0; i < 100; i++) {
			unsigned w = i % 2;

			CHECK(stats_seq(&wa[w], &ws[w], wa, 2, 1000 + i));
			CHECK(stats_seq(&wb[w], &ws[w], wb, 2, 3000000000u + 2 * i));
		}
		tunnels_leave(&p, 0);
		CHECK_U64(ws[0].ctr[STAT_SEQ_OUTSIDE] + ws[1].ctr[STAT_SEQ_OUTSIDE], 0);
		CHECK_U64(ws[0].ctr[STAT_SEQ_PACKETS] + ws[1].ctr[STAT_SEQ_PACKETS], 200);
		CHECK(seq_span(&p, slot_a, 1000, 1099, 0));
		CHECK(seq_span(&p, slot_b, 3000000000u, 3000000198u, 99));
	}
	s[0] = spec("a", "2001:2::2", 9, "2001:2:0:4000::/64"); /* all new but the name */
	CHECK_INT(tunnels_pub_set(&p, s, 2), 0);
	CHECK_INT(slot_of(&p, "a"), slot_a);
	CHECK_INT(slot_of(&p, "b"), slot_b);
	tunnels_pub_stats(&p, slot_a, &sum);
	CHECK_U64(sum.ctr[TUNNEL_TX_PACKETS], 7); /* both workers', across the replace */
	CHECK_U64(sum.drops[tunnels_drop_index(DROP_TX_TOO_BIG)], 1);
	held = tunnels_enter(&p, 0);
	CHECK_U64(tunnels_seq_take(&p, tunnels_at(held, tunnels_find(held, "a")), 1), 10);
	tunnels_leave(&p, 0);
	CHECK(seq_span(&p, slot_a, 1000, 1099, 0)); /* its window too */

	printf("case: publication: a table in a worker's pass outlives its replacement\n");
	held = tunnels_enter(&p, 1);
	CHECK_INT(tunnels_gen(held), 3);
	s[1] = spec("c", "198.18.0.2", 3, "198.18.66.0/24"); /* b goes, c comes */
	CHECK_INT(tunnels_pub_set(&p, s, 2), 0);
	CHECK(slot_of(&p, "c") != slot_b); /* b's slot waits for the pass */
	CHECK_INT(tunnels_pub_reclaim(&p), 1);
	/* Not in effect: worker 1 may still take a packet with generation 3. */
	CHECK_U64(tunnels_pub_settled(&p), 3);
	CHECK_INT(tunnels_pub_holder(&p), 1);
	CHECK_STR(encap_name(held, "198.18.65.1"), "b"); /* still whole */
	tunnels_stat_add(tunnels_stats(&p, 1, tunnels_at(held, tunnels_find(held, "b"))),
			 TUNNEL_RX_PACKETS, 1);
	tunnels_leave(&p, 1);
	CHECK_U64(tunnels_pub_settled(&p), 4);
	CHECK_INT(tunnels_pub_holder(&p), -1);
	CHECK_INT(tunnels_pub_reclaim(&p), 0);
	s[2] = spec("d", "198.18.0.2", 4, "198.18.67.0/24");
	CHECK_INT(tunnels_pub_set(&p, s, 3), 0);
	CHECK_INT(slot_of(&p, "d"), slot_b); /* free again, and counted from zero */
	tunnels_pub_stats(&p, slot_b, &sum);
	CHECK_U64(sum.ctr[TUNNEL_RX_PACKETS], 0);
	{
		struct seq_summary sq;

		tunnels_pub_seq(&p, slot_b, &sq);
		CHECK(!sq.any); /* b's windows went with it */
	}

	printf("case: publication: a worker asleep holds nothing; one in a pass holds up to "
	       "%d tables\n",
	       TUNNELS_RETIRED_MAX);
	CHECK_INT(tunnels_pub_set(&p, s, 3), 0);
	CHECK_INT(tunnels_pub_reclaim(&p), 0); /* neither worker in a pass */
	CHECK_U64(tunnels_pub_settled(&p), 6); /* in effect at once */
	held = tunnels_enter(&p, 0);
	for (int i = 0; i < TUNNELS_RETIRED_MAX; i++)
		CHECK_INT(tunnels_pub_set(&p, s, 3), 0);
	CHECK_INT(tunnels_pub_set(&p, s, 3), -EBUSY);
	CHECK_INT(tunnels_gen(tunnels_pub_current(&p)), 6 + TUNNELS_RETIRED_MAX);
	/* Worker 1 enters after them: it holds the newest, and only worker 0 holds them back. */
	CHECK_INT(tunnels_gen(tunnels_enter(&p, 1)), 6 + TUNNELS_RETIRED_MAX);
	CHECK_U64(tunnels_pub_settled(&p), 6);
	CHECK_INT(tunnels_pub_holder(&p), 0);
	tunnels_leave(&p, 1);
	tunnels_leave(&p, 0);
	CHECK_U64(tunnels_pub_settled(&p), 6 + TUNNELS_RETIRED_MAX);
	CHECK_INT(tunnels_pub_set(&p, s, 3), 0);
	CHECK_INT(tunnels_pub_reclaim(&p), 0);

	printf("case: publication: a refused set changes nothing\n");
	s[2] = spec("a", "198.18.0.2", 4, "198.18.67.0/24");
	CHECK_INT(tunnels_pub_set(&p, s, 3), -EEXIST);
	CHECK_INT(tunnels_gen(tunnels_pub_current(&p)), 7 + TUNNELS_RETIRED_MAX);
	CHECK_INT(tunnels_count(tunnels_pub_current(&p)), 3);
	CHECK_INT(slot_of(&p, "d"), slot_b);
	tunnels_pub_fini(&p);
	tunnels_pub_fini(&p); /* twice is safe */
}

/*
 * A writer publishes tables in turn while a reader looks up in whatever it holds: every table
 * of generation g names its tunnels "gP-i", P the parity of g, so a reader that saw a table
 * half replaced, or freed and reused, would find names of the other parity (and ASan a use
 * after free).
 */
enum { PASSES = 20000, THREAD_TUNNELS = 64 };

static struct tunnels_pub thread_pub;
static int reader_done, reader_started;
static uint64_t torn, passes_seen, gens_seen;

static void thread_specs(struct tunnel_spec *s, uint64_t gen)
{
	for (unsigned i = 0; i < THREAD_TUNNELS; i++) {
		char name[32], pfx[64];

		snprintf(name, sizeof(name), "g%u-%u", (unsigned)(gen % 2), i);
		snprintf(pfx, sizeof(pfx), "198.18.%u.0/24", 64 + i);
		s[i] = spec(name, "198.18.0.2", i + 1, pfx);
	}
}

static void *reader(void *arg)
{
	uint64_t last = 0;

	(void)arg;
	__atomic_store_n(&reader_started, 1, __ATOMIC_RELEASE);
	/*
	 * Until it has made PASSES passes and seen the table change under it at least twice: on a
	 * busy machine the writer may not run for a whole 20,000 passes (it once did not), and a
	 * reader that never saw a change proves nothing. The writer publishes until it is done.
	 */
	for (unsigned pass = 0; pass < PASSES || gens_seen < 3; pass++) {
		const struct tunnels *t = tunnels_enter(&thread_pub, 0);
		uint64_t gen = tunnels_gen(t);
		char want[8];

		snprintf(want, sizeof(want), "g%u-", (unsigned)(gen % 2));
		if (gen != last)
			gens_seen++;
		last = gen;
		if (gen > 1 && tunnels_count(t) != THREAD_TUNNELS)
			torn++;
		for (unsigned i = 0; gen > 1 && i < THREAD_TUNNELS; i += 7) {
			uint8_t a[4] = { 198, 18, (uint8_t)(64 + i), 9 };
			uint32_t idx = tunnels_encap(t, AF_INET, a);

			if (idx == TUNNELS_NONE || strncmp(tunnels_at(t, idx)->name, want, 3) != 0)
				torn++;
			else
				tunnels_stat_add(tunnels_stats(&thread_pub, 0, tunnels_at(t, idx)),
						 TUNNEL_TX_PACKETS, 1);
		}
		tunnels_leave(&thread_pub, 0);
		passes_seen++;
		if (pass % 64 == 0)
			sched_yield(); /* the writer may share this CPU */
	}
	__atomic_store_n(&reader_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void test_concurrent(void)
{
	struct tunnel_spec s[THREAD_TUNNELS];
	uint64_t published = 0, busy = 0, refused = 0;
	pthread_t th;

	printf("case: %d passes (or more: 2 changes seen) of a reader beside a writer\n", PASSES);
	CHECK_INT(tunnels_pub_init(&thread_pub, 1), 0);
	CHECK_INT(pthread_create(&th, NULL, reader, NULL), 0);
	while (!__atomic_load_n(&reader_started, __ATOMIC_ACQUIRE))
		;
	while (!__atomic_load_n(&reader_done, __ATOMIC_ACQUIRE)) {
		int rc;

		thread_specs(s, thread_pub.gen + 1);
		rc = tunnels_pub_set(&thread_pub, s, THREAD_TUNNELS);
		if (rc == -EBUSY) {
			busy++;
			sched_yield();
			continue;
		}
		refused += rc != 0;
		published += rc == 0;
	}
	pthread_join(th, NULL);
	CHECK_U64(refused, 0);
	CHECK_U64(torn, 0);
	CHECK(published > 0);
	CHECK(gens_seen > 1); /* the reader saw tables change under it */
	CHECK_INT(tunnels_pub_reclaim(&thread_pub), 0);
	printf("  %llu tables published (%llu times all %d waited), %llu seen by %llu passes\n",
	       (unsigned long long)published, (unsigned long long)busy, TUNNELS_RETIRED_MAX,
	       (unsigned long long)gens_seen, (unsigned long long)passes_seen);
	tunnels_pub_fini(&thread_pub);
}

/* A tunnel of the derivation's pool: name dN, peer one of two, key one of eight or none, one
 * to three of 64 cells (a /30 of 198.18.200.0/24 or a /64 of 2001:2:0:c8NN::/64), or, now and
 * then, the /24 that holds every cell, which nests. */
static struct tunnel_spec derive_spec(unsigned name)
{
	struct tunnel_spec s;
	char n[16], peer[32], pfx[160] = "";
	unsigned np = 1 + (unsigned)(rnd() % 3);
	long long key = (long long)(rnd() % 9) - 1;

	snprintf(n, sizeof(n), "d%02u", name);
	snprintf(peer, sizeof(peer), "198.18.0.%u", 2 + (unsigned)(rnd() % 2));
	for (unsigned j = 0; j < np; j++) {
		unsigned c = (unsigned)(rnd() % 64);
		size_t len = strlen(pfx);

		if (rnd() % 2)
			snprintf(pfx + len, sizeof(pfx) - len, "%s198.18.200.%u/30", j ? " " : "",
				 c * 4);
		else
			snprintf(pfx + len, sizeof(pfx) - len, "%s2001:2:0:c8%02x::/64",
				 j ? " " : "", c);
	}
	if (rnd() % 40 == 0)
		snprintf(pfx, sizeof(pfx), "198.18.200.0/24");
	s = spec(n, peer, key, pfx);
	return s;
}

/* Whether a and b send every address of the pool's cells to the same tunnel (by name), and
 * take every peer and key of the pool from the same one. */
static bool same_lookups(const struct tunnels *a, const struct tunnels *b)
{
	for (unsigned c = 0; c < 256; c++) {
		uint8_t v4[4] = { 198, 18, 200, (uint8_t)c },
			v6[16] = { 0x20, 0x01, 0, 2, 0, 0, 0xc8, (uint8_t)(c / 2) };
		uint32_t x = tunnels_encap(a, AF_INET, v4), y = tunnels_encap(b, AF_INET, v4);

		if ((x == TUNNELS_NONE) != (y == TUNNELS_NONE) ||
		    (x != TUNNELS_NONE && strcmp(tunnels_at(a, x)->name, tunnels_at(b, y)->name)))
			return false;
		memset(v6 + 8, c % 2 ? 0xff : 0, 8);
		x = tunnels_encap(a, AF_INET6, v6);
		y = tunnels_encap(b, AF_INET6, v6);
		if ((x == TUNNELS_NONE) != (y == TUNNELS_NONE) ||
		    (x != TUNNELS_NONE && strcmp(tunnels_at(a, x)->name, tunnels_at(b, y)->name)))
			return false;
	}
	for (unsigned peer = 2; peer <= 3; peer++) {
		for (int key = -1; key < 8; key++) {
			uint8_t src[4] = { 198, 18, 0, (uint8_t)peer };
			uint32_t x = TUNNELS_NONE, y = TUNNELS_NONE;
			enum drop_reason rx = tunnels_decap(a, AF_INET, src, key >= 0,
							    (uint32_t)(key < 0 ? 0 : key), &x);
			enum drop_reason ry = tunnels_decap(b, AF_INET, src, key >= 0,
							    (uint32_t)(key < 0 ? 0 : key), &y);

			if (rx != ry || (rx == DROP_NONE &&
					 strcmp(tunnels_at(a, x)->name, tunnels_at(b, y)->name)))
				return false;
		}
	}
	return true;
}

/*
 * Random changes made as gregw's control thread makes them (tunnels_pub_change, the whole
 * build of the list after it where that says -EAGAIN), each table in force checked against a
 * table built whole from the same list: the same verdict, the same tunnels in the same order,
 * the same lookups; a replace keeps its slot, no two tunnels share one.
 */
static void test_derive(void)
{
	enum { POOL = 24, CHANGES = 4000 };
	static struct tunnels_pub p;
	struct tunnel_spec list[POOL], after[POOL];
	unsigned n = 0, derived = 0, rebuilt = 0, refused = 0, wrong = 0, verdicts = 0;
	unsigned slots_shared = 0, slot_moved = 0;

	printf("case: changes derived from the table in force, against whole builds\n");
	CHECK_INT(tunnels_pub_init(&p, 1), 0);
	for (unsigned i = 0; i < CHANGES; i++) {
		struct tunnel_spec x = derive_spec((unsigned)(rnd() % POOL));
		uint32_t at = 0, old_slot = TUNNELS_NONE, n2;
		enum tunfile_change ch;
		struct tunnels *ref;
		int rc, want;

		while (at < n && strcmp(list[at].name, x.name) < 0)
			at++;
		if (at < n && strcmp(list[at].name, x.name) == 0)
			ch = rnd() % 2 ? TUNFILE_REMOVE : TUNFILE_REPLACE;
		else
			ch = TUNFILE_ADD;
		memcpy(after, list, at * sizeof(*after));
		n2 = at;
		if (ch != TUNFILE_REMOVE)
			after[n2++] = x;
		memcpy(after + n2, list + at + (ch != TUNFILE_ADD),
		       (n - at - (ch != TUNFILE_ADD)) * sizeof(*after));
		n2 += n - at - (ch != TUNFILE_ADD);
		if (ch == TUNFILE_REPLACE)
			old_slot = slot_of(&p, x.name);
		want = tunnels_build(after, n2, NULL, &ref);
		rc = tunnels_pub_change(&p, ch, &x);
		if (rc == 0) {
			derived++;
		} else if (rc == -EAGAIN) {
			rc = tunnels_pub_set(&p, after, n2);
			rebuilt += rc == 0;
		}
		refused += rc != 0;
		verdicts += (rc == 0) != (want == 0);
		if (want == 0 && rc == 0) {
			const struct tunnels *cur = tunnels_pub_current(&p);
			uint8_t seen[TUNNELS_MAX / 8] = { 0 };

			wrong += tunnels_count(cur) != n2 || !same_lookups(cur, ref);
			for (uint32_t k = 0; k < tunnels_count(cur); k++) {
				uint32_t slot = tunnels_at(cur, k)->slot;

				wrong += strcmp(tunnels_at(cur, k)->name, after[k].name) != 0;
				slots_shared += (seen[slot / 8] >> slot % 8) & 1;
				seen[slot / 8] |= (uint8_t)(1u << slot % 8);
			}
			slot_moved += ch == TUNFILE_REPLACE && slot_of(&p, x.name) != old_slot;
			memcpy(list, after, n2 * sizeof(*list));
			n = n2;
		}
		if (want == 0)
			tunnels_free(ref);
	}
	CHECK_INT(verdicts, 0);
	CHECK_INT(wrong, 0);
	CHECK_INT(slots_shared, 0);
	CHECK_INT(slot_moved, 0);
	/* Every way was taken, in numbers. */
	CHECK(derived > CHANGES / 4);
	CHECK(rebuilt > 10);
	CHECK(refused > 10);
	printf("  %u changes: %u derived, %u built whole, %u refused\n", CHANGES, derived, rebuilt,
	       refused);
	tunnels_pub_fini(&p);
}

/* For callgrind: lookups in a table of the bed's tunnels, 100,000 of each kind, each kind from a function
 * of its own so that callgrind_annotate shows each apart. */
__attribute__((noinline)) static uint32_t lookup4(const struct tunnels *t, const uint8_t *a)
{
	return tunnels_encap(t, AF_INET, a);
}

__attribute__((noinline)) static uint32_t lookup6(const struct tunnels *t, const uint8_t *a)
{
	return tunnels_encap(t, AF_INET6, a);
}

__attribute__((noinline)) static enum drop_reason
lookup_decap(const struct tunnels *t, const uint8_t *src, uint32_t key, uint32_t *idx)
{
	return tunnels_decap(t, AF_INET, src, true, key, idx);
}

/* A change of one tunnel among n: a whole table built and published. */
__attribute__((noinline)) static int change(struct tunnels_pub *p, const struct tunnel_spec *s,
					    unsigned n)
{
	return tunnels_pub_set(p, s, n);
}

/* The same change derived from the table in force, as gregw makes it (tunnels_pub_change). */
__attribute__((noinline)) static int derive(struct tunnels_pub *p, enum tunfile_change ch,
					    const struct tunnel_spec *s)
{
	return tunnels_pub_change(p, ch, s);
}

static int lookups(unsigned n)
{
	static struct tunnels_pub pub;
	struct tunnel_spec *s = malloc(n * sizeof(*s));
	uint32_t sink = 0, idx;
	struct tunnels *t;

	for (unsigned i = 0; i < n; i++)
		s[i] = bed_spec(i);
	if (tunnels_build(s, n, NULL, &t))
		return 1;
	for (unsigned i = 0; i < 100000; i++) {
		const struct tunnel_spec *x = &s[(i * 7919u) % n];
		uint8_t a6[16];

		sink += lookup4(t, x->prefixes[0].addr.bytes);
		memcpy(a6, x->prefixes[1].addr.bytes, 16);
		a6[15] = 2;
		sink += lookup6(t, a6);
		if (lookup_decap(t, x->peer.bytes, x->key, &idx) == DROP_NONE)
			sink += idx;
	}
	printf("%u\n", sink);
	tunnels_free(t);
	if (tunnels_pub_init(&pub, 2) || tunnels_pub_set(&pub, s, n))
		return 1;
	for (unsigned i = 0; i < 10; i++) {
		s[i].key += n;
		if (change(&pub, s, n))
			return 1;
	}
	/* Ten replaces (a key again), removes and adds back, each derived. */
	for (unsigned i = 0; i < 10 && i < n; i++) {
		s[i].key += n;
		if (derive(&pub, TUNFILE_REPLACE, &s[i]) || derive(&pub, TUNFILE_REMOVE, &s[i]) ||
		    derive(&pub, TUNFILE_ADD, &s[i]))
			return 1;
	}
	tunnels_pub_fini(&pub);
	free(s);
	return 0;
}

/* Whether the wake-up descriptor has a count to take. */
static bool woken(const struct tunnels_pub *p)
{
	struct pollfd pfd = { .fd = tunnels_pub_wake_fd(p), .events = POLLIN };

	return poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN);
}

/* While the control thread waits for the passes, a worker's pass end wakes it; otherwise
 * nothing is written. */
static void test_wake(void)
{
	static struct tunnels_pub p;

	printf("case: a pass's end wakes the control thread while it waits, only then\n");
	CHECK_INT(tunnels_pub_init(&p, 2), 0);
	CHECK(tunnels_pub_wake_fd(&p) >= 0);
	tunnels_enter(&p, 0);
	tunnels_leave(&p, 0);
	CHECK(!woken(&p));
	tunnels_pub_want_wake(&p, true);
	tunnels_enter(&p, 1);
	CHECK(!woken(&p)); /* a pass's beginning is no end */
	tunnels_leave(&p, 1);
	CHECK(woken(&p));
	tunnels_pub_woken(&p);
	CHECK(!woken(&p));
	tunnels_pub_want_wake(&p, false);
	tunnels_enter(&p, 0);
	tunnels_leave(&p, 0);
	CHECK(!woken(&p));
	tunnels_pub_fini(&p);
	CHECK_INT(tunnels_pub_wake_fd(&p), -1);
}

int main(int argc, char **argv)
{
	if (argc > 2 && strcmp(argv[1], "--lookups") == 0)
		return lookups((unsigned)strtoul(argv[2], NULL, 10) % (TUNNELS_MAX + 1));
	test_encap();
	test_decap();
	test_refusals();
	test_bed();
	test_random();
	test_drops();
	test_publication();
	test_concurrent();
	test_derive();
	test_wake();
	return check_done("test_tunnels");
}
