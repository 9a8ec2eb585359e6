/*
 * TCP payload accounting of one inner flow as a wire observer sees it: which bytes are new,
 * which of those came after later data (reordered), and which had crossed before
 * (retransmitted). A few holes below the highest byte seen are remembered, as a SACK
 * scoreboard would (RFC 2018), so that reordering is not mistaken for retransmission.
 */
#ifndef TUNBED_WIRE_TCP_H
#define TUNBED_WIRE_TCP_H

#include <stdbool.h>
#include <stdint.h>

enum {
	/*
	 * Holes remembered per flow. Four is what SACK can report (RFC 2018, section 3);
	 * beyond it the oldest hole is forgotten and its bytes, when they come, count as
	 * retransmitted.
	 */
	WIRE_TCP_HOLES = 4,
};

struct wire_tcp {
	bool seen;
	uint8_t nholes;
	uint32_t hi; /* one past the highest payload byte seen */
	struct {
		uint32_t lo, hi; /* [lo, hi): not seen yet, below the highest */
	} holes[WIRE_TCP_HOLES];
};

/* What one segment brought. */
struct wire_tcp_result {
	uint32_t new_bytes;	  /* bytes seen for the first time */
	uint32_t reordered_bytes; /* the part of new_bytes that filled a hole */
};

/*
 * Accounts a segment: sequence number seq, len payload bytes, syn if it has SYN set (its
 * payload starts one after seq). Pure; no allocation.
 */
struct wire_tcp_result wire_tcp_add(struct wire_tcp *t, uint32_t seq, uint32_t len, bool syn);

#endif
