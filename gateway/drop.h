/*
 * Why gregw dropped a packet: every drop is counted under one of these, never logged.
 */
#ifndef TUNBED_GW_DROP_H
#define TUNBED_GW_DROP_H

enum drop_reason {
	DROP_NONE = 0,
	/* From the wire, before decapsulation. */
	DROP_TRUNCATED,	     /* capture shorter than the packet, or headers cut short */
	DROP_ZERO_LENGTH,    /* nothing after the outer header: no GRE header at all */
	DROP_BAD_OUTER,	     /* outer IP header malformed or its checksum wrong */
	DROP_OUTER_FRAGMENT, /* outer IP fragment: GRE is never reassembled here */
	DROP_UNKNOWN_PEER,   /* outer source no tunnel's peer, or destination not --local */
	DROP_BAD_VERSION,    /* GRE version is not 0 */
	DROP_BAD_FLAGS,	     /* GRE reserved, routing or recursion bits set */
	DROP_BAD_KEY,	     /* a tunnel's peer, but no tunnel of it has this key (or none) */
	DROP_NO_SEQ,	     /* --seq set, but the packet has no sequence number */
	DROP_NO_CSUM,	     /* --csum set, but the packet has no checksum */
	DROP_BAD_CSUM,	     /* GRE checksum wrong */
	DROP_BAD_PROTO,	     /* payload is neither IPv4 nor IPv6 */
	DROP_BAD_INNER,	     /* inner IP header malformed or longer than the payload */
	DROP_SPOOFED_SOURCE, /* inner source not allowed from the peer, or our own */
	DROP_TUNNEL_LOOP,    /* inner destination in the tunnel subnet, not our address */
	DROP_TUN_WRITE,	     /* the TUN refused the write (queue full, device down) */
	DROP_AQM,	     /* --aqm: CoDel dropped it from a standing queue */
	DROP_ECN_CE_NOT_ECT, /* CE outside, Not-ECT inside (RFC 6040, 4.2): its transport
			      * would never hear of the congestion but by a loss */
	/* From TUN, before encapsulation. */
	DROP_TX_BAD_INNER,   /* not a well-formed IPv4 or IPv6 packet */
	DROP_TX_TOO_BIG,     /* larger than the tunnel MTU (an ICMP error goes back if allowed) */
	DROP_TX_SEND,	     /* the kernel refused the send (buffer full, no route) */
	DROP_TX_FQ_OVERFLOW, /* --fair-queue with --fq-full drop: the queue was full, its
			      * longest flow gave it up (a read: a superpacket counts once) */
	DROP_TX_NO_TUNNEL,   /* no tunnel's prefix holds the inner destination (a superpacket
			      * counts once, as a read) */
	DROP_TX_AQM,	     /* --aqm with --fair-queue: its flow's CoDel in the flow queue
			      * dropped it, Not-ECT (of a superpacket, its last segment) */
	DROP_MAX,
};

/* Stable lowercase name of a reason, as used in the JSON telemetry ("bad_key"). */
const char *drop_name(enum drop_reason r);

#endif
