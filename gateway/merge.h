/*
 * Merging of a flow's reads from TUN before they leave (--tx-merge): TCP superpackets (and
 * packets) of one flow that a pass hands out one after the other are appended, payload only,
 * to the first one's buffer and leave as one superpacket. A read joins by the kernel's GRO
 * rules (tcpjoin.h): the same flow, the sequence and IPv4 identification going on, the same
 * IP fields, ACK number, window, flags but PSH and FIN, and options; its checksum left partial
 * at its TCP header, as a sender on this host leaves it; segments as large (the same
 * gso_size; a packet no larger); the superpacket so far ending on a whole segment; the
 * result within the room given. Two rules are looser than GRO's, for what a sending host's
 * TCP does to its own queue: a PSH does not end the superpacket (a sender blocked on its
 * buffer pushes every write, so nearly every read carries one; PSH is advisory, RFC 9293,
 * 3.9.1, and only the last segment cut keeps it), and a TCP timestamp (RFC 7323) may go on
 * (it ticks every millisecond; every segment then carries the first read's TSval and TSecr,
 * which an ACK of them all echoes anyway, RFC 7323, 4.3). Otherwise the segments cut from it
 * are the segments each read would have been cut into. A FIN or a short last segment joins
 * and ends it. Nothing is held back for time: what is not merged now leaves on its own.
 *
 * Pure; no allocation: the superpacket grows in the first read's buffer.
 */
#ifndef TUNBED_GW_MERGE_H
#define TUNBED_GW_MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "inet.h"

/* A superpacket being merged from reads. */
struct merge {
	uint8_t *pkt;	  /* the first read: the superpacket, grown in place */
	size_t len, room; /* its bytes; the most it may grow to */
	int family;
	unsigned l4_off, hdr_len;
	unsigned mss;	/* payload per segment: the first read's gso_size, or its payload */
	unsigned nseg;	/* segments in it */
	unsigned reads; /* reads in it, the first one too */
	uint32_t next_seq;
	uint16_t next_id; /* IPv4: the identification the next segment must have */
	bool closed;	  /* a short last segment or FIN: nothing may follow */
};

/*
 * Starts a superpacket at the read pkt (len bytes; room bytes may be written from pkt, room
 * >= len), whose segments carry mss bytes of payload (its gso_size), or a single packet (mss
 * 0: its payload is the segment size); csum is where its checksum was left partial (start 0:
 * complete). Returns false, *m unusable, when nothing may join it: not TCP, not mergeable
 * (tcpjoin.h), without payload, its checksum not left partial at its TCP header, a payload
 * that is not a whole number of segments, or SYN, FIN, RST, URG or CWR.
 */
bool merge_open(struct merge *m, uint8_t *pkt, size_t len, unsigned mss, struct l4_csum csum,
		size_t room);

/*
 * Appends the read pkt (len bytes, mss and csum as for merge_open) to m when it may join (see
 * above): its payload is copied after m's. Returns whether it did; false leaves m as it was.
 * A read with a short last segment or FIN joins and closes m.
 */
bool merge_add(struct merge *m, const uint8_t *pkt, size_t len, unsigned mss, struct l4_csum csum);

/* Rewrites m's headers for its length (tcpjoin_finish) once more than one read is in it. */
void merge_finish(struct merge *m);

#endif
