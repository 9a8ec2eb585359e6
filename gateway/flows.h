/*
 * Per-worker table of inner flows: what each flow sent and received through this worker,
 * and the last GRE sequence number seen on it, for reorder and duplicate counting. Fixed
 * size, no allocation after init, written only by its worker; the control thread reads it
 * with atomic loads (an entry is published once its key is complete).
 */
#ifndef TUNBED_GW_FLOWS_H
#define TUNBED_GW_FLOWS_H

#include <stdbool.h>
#include <stdint.h>

#include "flow.h"
#include "inet.h"
#include "gw_limits.h"

struct flow_entry {
	uint32_t used; /* set last, with release: the key is then complete */
	uint32_t hash;
	struct flow_key key;
	uint64_t encap_packets; /* TUN -> wire through this worker */
	uint64_t decap_packets; /* wire -> TUN through this worker */
	uint32_t last_seq;	/* highest GRE sequence number seen on this flow */
	uint32_t seq_era;	/* the worker's window (era id) last_seq belongs to; 0: none */
};

struct flow_table {
	struct flow_entry e[FLOW_TABLE_SIZE];
	uint64_t untracked; /* packets of flows that found no slot */
};

/*
 * Fills *k (common/flow.h) from an IP packet, both directions as one: end 0 is the lower
 * endpoint (address, then port), so that A->B and B->A are the same key, and flow_hash gives
 * both the same hash. Ports for TCP, UDP, SCTP and UDP-Lite on first fragments.
 */
void flow_key_from(const uint8_t *pkt, size_t len, const struct ip_info *ip, struct flow_key *k);

/* The entry of k, inserted if new; NULL (and untracked counted) if no slot is free. */
struct flow_entry *flow_get(struct flow_table *t, const struct flow_key *k);

/*
 * Records GRE sequence number seq, taken in the window of era era (stats.h), on flow e (RFC
 * 2890 serial arithmetic). Returns 0 for a number above every one seen on the flow in that
 * era (the first of a new era too: a restarted peer's numbers start again), 1 for one below
 * (a reorder) and 2 for a repeat of the highest (a duplicate).
 */
int flow_seq(struct flow_entry *e, uint32_t seq, uint32_t era);

#endif
