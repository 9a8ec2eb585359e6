/*
 * Merging of a flow's reads from TUN before they leave (--tx-merge): TCP superpackets (and
 * packets) of one flow that a pass hands out one after the other are appended, payload only,
 * to the first one's buffer and leave as one superpacket, as the kernel's GRO would have
 * merged them (tcpjoin.h): the segments the kernel cuts from it are the segments each read
 * would have been cut into. A read joins when it is of the same flow and follows it
 * (tcpjoin_follows: the sequence and IPv4 identification go on, the headers agree), its
 * checksum is left partial at its TCP header, as a sender on this host leaves it, its segments
 * are as large (the same gso_size; a packet no larger), the superpacket so far ends on a whole
 * segment without PSH or FIN, and the result stays within the room given. Nothing is held
 * back for time: what is not merged now leaves on its own.
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
	bool closed;	  /* a short last segment, PSH or FIN: nothing may follow */
};

/*
 * Starts a superpacket at the read pkt (len bytes; room bytes may be written from pkt, room
 * >= len), whose segments carry mss bytes of payload (its gso_size), or a single packet (mss
 * 0: its payload is the segment size); csum is where its checksum was left partial (start 0:
 * complete). Returns false, *m unusable, when nothing may join it: not TCP, not mergeable
 * (tcpjoin_opens), its checksum not left partial at its TCP header, a payload that is not a
 * whole number of segments, or CWR (its segments' flags differ from any that may follow).
 */
bool merge_open(struct merge *m, uint8_t *pkt, size_t len, unsigned mss, struct l4_csum csum,
		size_t room);

/*
 * Appends the read pkt (len bytes, mss and csum as for merge_open) to m when it may join (see
 * above): its payload is copied after m's. Returns whether it did; false leaves m as it was.
 * A read with a short last segment, PSH or FIN joins and closes m.
 */
bool merge_add(struct merge *m, const uint8_t *pkt, size_t len, unsigned mss, struct l4_csum csum);

/* Rewrites m's headers for its length (tcpjoin_finish) once more than one read is in it. */
void merge_finish(struct merge *m);

#endif
