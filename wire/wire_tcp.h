/*
 * TCP payload accounting of one inner flow as a wire observer sees it: which bytes are new,
 * which had crossed before (retransmitted), and which came after later data (late). A few
 * holes below the highest byte seen are remembered, as a SACK scoreboard would (RFC 2018), so
 * that late data is not mistaken for retransmission. Late data was either reordered before
 * the observer or resent after a loss before it; over IPv4 the identification field tells
 * which, since Linux numbers a TCP socket's segments in sending order. Without it (IPv6) late
 * data stays unresolved.
 */
#ifndef TUNBED_WIRE_TCP_H
#define TUNBED_WIRE_TCP_H

#include <stdbool.h>
#include <stdint.h>

#include "wire_limits.h" /* WIRE_TCP_HOLES */

struct wire_tcp {
	bool seen;
	uint8_t nholes;
	bool has_hi_id;
	uint16_t hi_id; /* IPv4 identification of the segment that reached hi */
	uint32_t hi;	/* one past the highest payload byte seen */
	struct {
		uint32_t lo, hi; /* [lo, hi): not seen yet, below the highest */
	} holes[WIRE_TCP_HOLES];
};

/* What one segment brought. */
struct wire_tcp_result {
	uint32_t new_bytes;    /* bytes seen for the first time */
	uint32_t late_bytes;   /* the part of new_bytes that filled a hole */
	uint32_t resent_bytes; /* the part of late_bytes sent after the data above the hole */
	/* The part of late_bytes of unknown sending order: no identification to compare. */
	uint32_t unresolved_bytes;
};

/* A segment as the flow's accounting needs it. */
struct wire_tcp_seg {
	uint32_t seq, len; /* sequence number and payload bytes */
	bool syn;	   /* SYN set: the payload starts one after seq */
	bool has_id;	   /* inner IPv4: id is its identification field */
	uint16_t id;
};

/* Accounts a segment. Pure; no allocation. */
struct wire_tcp_result wire_tcp_add(struct wire_tcp *t, const struct wire_tcp_seg *s);

#endif
