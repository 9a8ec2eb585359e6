/*
 * gregw's tunnel table (docs/gregw.md, "Many tunnels"): tunnels, each a peer, an optional GRE
 * key (RFC 2890), inner prefixes and options, and the two lookups of the packet path: the
 * tunnel of an inner destination (longest prefix), and the tunnel of an outer source and key.
 * A table is built whole by the control thread and never changed after: a change builds a new
 * one, which tunnels_pub.h publishes to the workers.
 */
#ifndef TUNBED_GW_TUNNELS_H
#define TUNBED_GW_TUNNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "drop.h"
#include "gw_limits.h"
#include "netaddr.h"
#include "tunfile.h" /* struct tunnel_spec, TUNNELS_MAX */

/* One tunnel as the workers read it. */
struct tunnel {
	char name[TUNNEL_NAME_LEN];
	int family; /* outer: AF_INET or AF_INET6 */
	uint8_t peer[16];
	unsigned gre_flags;
	uint32_t key;
	bool udp;
	uint32_t slot; /* its counters and sequence numbers in the publication */
};

enum { TUNNELS_NONE = UINT32_MAX };

/* A built table: opaque, immutable. */
struct tunnels;

/*
 * Builds the table of the n tunnels of specs, tunnel i counting at slot slots[i] (NULL: slot i;
 * each below TUNNELS_MAX, all distinct). Returns 0 with *out, -E2BIG for more than TUNNELS_MAX,
 * -EINVAL for a spec that breaks the table's own rules (an address of no family, a prefix
 * longer than its family's, a slot out of range), -EEXIST for two tunnels of one name, of one
 * peer and key (or both without one), or with one prefix, -ENOMEM. The table's tunnels are in
 * the order of their names. Control thread: it allocates. tunfile_check names the tunnel
 * that breaks a rule; this only refuses.
 */
int tunnels_build(const struct tunnel_spec *specs, unsigned n, const uint32_t *slots,
		  struct tunnels **out);

/*
 * The same for specs in the order of their names, as tunnels_sort_names leaves them: order[i]
 * counts at slots[i] (not NULL). -EINVAL also for names out of order. Control thread.
 */
int tunnels_build_sorted(const struct tunnel_spec *const *order, unsigned n, const uint32_t *slots,
			 struct tunnels **out);

/* Whether every name of specs is 1 to TUNNEL_NAME_LEN - 1 bytes with its NUL. Pure. */
bool tunnels_names_ok(const struct tunnel_spec *specs, unsigned n);

/* Sorts n specs by name (strcmp), unless they are sorted already (O(n) then). Pure. */
void tunnels_sort_names(const struct tunnel_spec **order, unsigned n);

/*
 * The table after one change of cur, derived from cur's arrays rather than built whole: ch of
 * s (TUNFILE_REMOVE: s's name alone counts), the tunnel of an add counting at slot (below
 * TUNNELS_MAX and no other tunnel's; a replace keeps the slot of the tunnel it replaces). The
 * tunnels, each family's ranges and the hash are each copied once with the indices after the
 * change's moved, and only the changed tunnel's prefixes and hash slots are looked up: a
 * copy of cur and work of the change's size, where tunnels_build checks, sorts and hashes
 * every tunnel again. Returns 0 with *out (cur unchanged), -EEXIST (an add of a name cur has;
 * another tunnel's peer and key), -ENOENT (a remove or replace of a name cur lacks), -E2BIG,
 * -EINVAL (s breaks tunnels_build's rules, or the slot), -ENOMEM, or -EAGAIN when the change
 * needs the whole build (tunnels_build_sorted of the list after it): prefixes that nest, in
 * cur or with s's, or one of s's on another tunnel's; a hash that would be over half full.
 * Control thread.
 */
int tunnels_derive(const struct tunnels *cur, enum tunfile_change ch, const struct tunnel_spec *s,
		   uint32_t slot, struct tunnels **out);

/* Frees a table no worker can still read (tunnels_pub does that for published ones). */
void tunnels_free(struct tunnels *t);

/* Its tunnels, in the order of their names; i below tunnels_count. Any thread. */
unsigned tunnels_count(const struct tunnels *t);
const struct tunnel *tunnels_at(const struct tunnels *t, uint32_t i);

/* The index of the tunnel named name, or TUNNELS_NONE. Any thread. */
uint32_t tunnels_find(const struct tunnels *t, const char *name);

/* Whether a prefix of the table lies inside another (its own tunnel's or another's): then
 * tunnels_derive says -EAGAIN. Any thread. */
bool tunnels_nested(const struct tunnels *t);

/* The publication's number of the table, from 1 (0 until tunnels_pub gives it one). */
uint64_t tunnels_gen(const struct tunnels *t);
void tunnels_set_gen(struct tunnels *t, uint64_t gen);

/*
 * Encapsulation: the tunnel whose inner prefix holds dst (4 or 16 bytes of family, network
 * order) longest, or TUNNELS_NONE. Worker threads, with a table from tunnels_enter.
 */
uint32_t tunnels_encap(const struct tunnels *t, int family, const uint8_t *dst);

/*
 * Decapsulation: the tunnel of outer source src (4 or 16 bytes of family) and key (has_key:
 * the packet has one). Returns DROP_NONE with *idx, DROP_BAD_KEY when tunnels come from src but
 * none with this key (or without one, as the packet), DROP_UNKNOWN_PEER when none does. The
 * inner source is then the caller's to check: tunnels_encap of it must give the same tunnel
 * (the prefixes are also what the peer may send from). Worker threads.
 */
enum drop_reason tunnels_decap(const struct tunnels *t, int family, const uint8_t *src,
			       bool has_key, uint32_t key, uint32_t *idx);

/* What the lookups cost, for tests and the stats: boundaries of the IPv4 and IPv6 ranges
 * (a lookup is a binary search over them), slots of the decapsulation hash and the longest
 * probe it needs (a lookup probes at most that many). */
struct tunnels_shape {
	unsigned ranges4, ranges6;
	unsigned hash_slots, hash_probe_max;
};
void tunnels_shape(const struct tunnels *t, struct tunnels_shape *out);

#endif
