/*
 * When one TCP segment may follow another in a superpacket, by the rules of the kernel's GRO
 * (net/ipv4/tcp_offload.c tcp_gro_receive, net/ipv4/af_inet.c inet_gro_receive,
 * net/ipv6/ip6_offload.c ipv6_gro_receive), and the headers of the superpacket that results:
 * shared by the coalescer (coalesce.h: segments from the wire, towards TUN) and merging
 * (merge.h: reads from TUN, towards the wire). Pure: no I/O, no allocation.
 */
#ifndef TUNBED_GW_TCPJOIN_H
#define TUNBED_GW_TCPJOIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "inet.h"

/* A TCP segment (or the first segment's headers of a superpacket) as joining reads it. */
struct tcpjoin_seg {
	const uint8_t *pkt;
	size_t len;
	int family;		  /* AF_INET or AF_INET6 */
	unsigned l4_off, hdr_len; /* TCP header; every header */
	size_t plen;		  /* payload: len - hdr_len */
	uint8_t flags;		  /* TCP flags */
	uint32_t seq;
	bool mergeable; /* IPv4 without options and its header checksum right (its header is
			 * dropped or rewritten when it joins), or IPv6 with TCP right after
			 * the fixed header; as inet_gro_receive and ipv6_gro_receive take them */
};

/*
 * Reads the headers of the IPv4 or IPv6 packet pkt (len bytes) into *s: false when it is not
 * TCP (or an IPv4 fragment, or too short for its TCP header). Its lengths are the caller's to
 * have checked; only len is used.
 */
bool tcpjoin_parse(const uint8_t *pkt, size_t len, struct tcpjoin_seg *s);

/* Whether s may open a superpacket that others join: mergeable, with payload, and no SYN, FIN,
 * RST, URG or PSH (each of which ends a superpacket, or is never in one). */
static inline bool tcpjoin_opens(const struct tcpjoin_seg *s)
{
	return s->mergeable && s->plen != 0 &&
	       !(s->flags & (TCP_F_SYN | TCP_F_FIN | TCP_F_RST | TCP_F_URG | TCP_F_PSH));
}

/* Whether s is of the flow of the packet at a (family, its TCP header at l4_off): the same
 * family, addresses and ports. */
bool tcpjoin_same_flow(const uint8_t *a, int family, unsigned l4_off, const struct tcpjoin_seg *s);

/* What tcpjoin_follows may take beyond the kernel's GRO rules. */
enum tcpjoin_rules {
	TCPJOIN_GRO = 0,	    /* the kernel's GRO rules, nothing more */
	TCPJOIN_NEWER_TS = 1u << 0, /* a timestamps option (RFC 7323) whose TSval and TSecr
				     * are not older than the superpacket's, the rest of the
				     * options the same */
};

/*
 * Whether segment s may follow, within one superpacket, the one whose headers are at a (s's
 * flow, hdr_len bytes of headers, TCP at l4_off), whose next sequence number is next_seq and,
 * over IPv4, whose next identification is next_id: s mergeable, its headers as long; its
 * sequence number next_seq; over IPv4 the same TOS, DF and TTL and the identification
 * next_id, over IPv6 the same traffic class, flow label and hop limit; the same ACK number,
 * data offset, window and option bytes (with TCPJOIN_NEWER_TS in rules: but the timestamps'
 * values, which may only go on); the same flags but PSH and FIN, and no CWR (a CWR starts a
 * superpacket, never continues one). Sizes (the payload against the segment size, the
 * superpacket's length) are the caller's rules.
 */
bool tcpjoin_follows(const uint8_t *a, unsigned l4_off, unsigned hdr_len,
		     const struct tcpjoin_seg *s, uint32_t next_seq, uint16_t next_id,
		     enum tcpjoin_rules rules);

/*
 * Rewrites the first segment's headers at p as a superpacket's of len bytes (TCP at l4_off):
 * the IPv4 total length and header checksum, or the IPv6 payload length; the TCP checksum
 * left partial, its field holding the pseudo-header's sum over the whole TCP length, as
 * CHECKSUM_PARTIAL has it (the segmentation adjusts it per segment).
 */
void tcpjoin_finish(uint8_t *p, size_t len, int family, unsigned l4_off);

#endif
