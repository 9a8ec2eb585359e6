/*
 * The per-packet transforms of gregw: inner packet to GRE packet (RFC 2784, RFC 2890) over
 * IPv4 or IPv6, and back, with every check a packet from the wire must pass. Pure: no I/O,
 * no allocation, no logging; safe from any worker at once (the config is read-only).
 */
#ifndef TUNBED_GW_ENCAP_H
#define TUNBED_GW_ENCAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "drop.h"
#include "gre.h"
#include "inet.h"
#include "gw_limits.h"
#include "tos.h"
#include "tunnels.h"

enum {
	/* Room before an inner packet for the largest outer header, IPv6 plus full GRE, and
	 * before that a frame's virtio and Ethernet headers (tx_packet.c: 80 bytes in
	 * all). */
	ENCAP_HEADROOM = 96,
	ENCAP_OUTER_MAX = IPV6_HLEN + GRE_HLEN_MAX,
};

/* A prefix as the packet path matches it: 4 or 16 address bytes of family, len bits. */
struct encap_prefix {
	uint8_t family; /* AF_INET or AF_INET6 */
	uint8_t len;	/* 0 to 32, or 0 to 128 */
	uint8_t addr[16];
};

/* What the workers share: built once before they start, then only read. */
struct encap_cfg {
	int family;	    /* outer: AF_INET or AF_INET6 */
	uint8_t local[16];  /* outer source, 4 or 16 bytes used */
	uint8_t remote[16]; /* outer destination, the only peer accepted */
	unsigned gre_flags; /* GRE_F_*: what we send, and what we require on receipt */
	uint32_t key;
	bool udp;	   /* GRE-in-UDP (RFC 8086): the kernel writes the outer IP and UDP */
	uint16_t udp_port; /* its destination port, 4754 */
	unsigned mtu;	   /* largest inner packet the tunnel carries */
	uint8_t ttl;	   /* outer TTL / hop limit of the template and the sockets */
	/* --tos, --ttl: each packet's outer DS field and TTL (encap_tos); with --ttl inherit,
	 * ttl above is TUNNEL_TTL. */
	struct tos_cfg tos;
	bool mss_clamp;
	bool has_addr4, has_addr6; /* the TUN's own addresses, sources of ICMP errors */
	uint8_t addr4[4], addr6[16];
	uint8_t addr4_len, addr6_len; /* their prefixes: the tunnel subnets */
	/* A tunnel's prefixes are also the inner sources its peer may send from (--tunnels);
	 * without, the one tunnel of --remote takes every destination and its sources are
	 * allow's alone, as --route and --allow-from say. */
	bool tunnel_sources;
	/* Inner sources (encap_sources): what the peer may send from, and what it never may
	 * (our own addresses and LANs), those within reach of an allowed prefix first. */
	unsigned nallow, nown, nown_near;
	struct encap_prefix allow[ENCAP_ALLOW_MAX];
	struct encap_prefix own[ENCAP_OWN_MAX];
	/* Derived by encap_cfg_finish. */
	unsigned outer_hlen; /* what encap_build writes: outer IP + GRE, or GRE over UDP */
	uint8_t outer_tmpl[ENCAP_OUTER_MAX];
};

/* Overhead of the outer headers for a family, GRE flags and UDP or not: MTU minus this is the
 * inner MTU. */
unsigned encap_overhead(int family, unsigned gre_flags, bool udp);

/* The outer header encap_build writes for tunnel tn (NULL: c's own peer, key and flags):
 * outer IP and GRE, or over UDP GRE alone. Pure. */
unsigned encap_outer_hlen(const struct encap_cfg *c, const struct tunnel *tn);

/* Writes the outer IP header of c into t (ip_fixed_hlen bytes): version, DF (IPv4),
 * TTL or hop limit, protocol (or next header) proto, the addresses; lengths and the IPv4
 * checksum 0, for the sender to fill. Pure. */
void encap_ip_template(const struct encap_cfg *c, uint8_t proto, uint8_t *t);

/*
 * The outer header's DS field and TTL for the inner packet at inner, whose IP header is whole
 * there (encap_check passed, or a segment's headers): the DSCP copied or fixed, the ECN field
 * copied (RFC 6040 normal mode), the TTL copied or fixed, as c->tos says (tos_encap). Pure.
 */
struct tos_fields encap_tos(const struct encap_cfg *c, const uint8_t *inner);

/* Computes the derived fields (outer header template) once the others are set. */
void encap_cfg_finish(struct encap_cfg *c);

/* Whether addr (4 or 16 bytes of family) lies in p. Pure. */
bool encap_prefix_has(const struct encap_prefix *p, int family, const uint8_t *addr);

/*
 * Sets the inner sources c accepts from the peer: the nallow prefixes of allow, and never
 * those of own (nown), the ones that reach into an allowed prefix first (nown_near): only
 * they can match a source that is allowed; the others matter for the ICMP errors taken from
 * any router. Returns 0, or -ENOSPC when allow has more than ENCAP_ALLOW_MAX or own more than
 * ENCAP_OWN_MAX. Pure.
 */
int encap_sources(struct encap_cfg *c, const struct encap_prefix *allow, unsigned nallow,
		  const struct encap_prefix *own, unsigned nown);

/*
 * Checks an inner packet read from TUN. Returns DROP_NONE with *ip filled, DROP_TX_BAD_INNER
 * (not a well-formed IPv4 or IPv6 packet) or DROP_TX_TOO_BIG (larger than c->mtu).
 */
enum drop_reason encap_check(const struct encap_cfg *c, const uint8_t *inner, size_t len,
			     struct ip_info *ip);

/*
 * Writes the outer headers of tunnel tn (its peer, key and GRE flags; NULL: c's own) into the
 * ENCAP_HEADROOM bytes before inner and returns the start of the outer packet; its length is
 * encap_outer_hlen(c, tn) + len. seq is used with GRE_F_SEQ. The outer IP header's DS field
 * and TTL are encap_tos's. Over UDP that is the GRE header alone: the UDP socket adds the rest
 * (its sender sets encap_tos's fields).
 */
uint8_t *encap_build(const struct encap_cfg *c, const struct tunnel *tn, uint8_t *inner, size_t len,
		     uint32_t seq);

/*
 * The same for an inner packet in two parts, as a segment is sent: its headers at inner
 * (len bytes, even, with the headroom before them) and its payload at tail (tail_len bytes,
 * sent from where it lies). The outer packet is c->outer_hlen + len bytes from the returned
 * start, then the tail.
 */
uint8_t *encap_build2(const struct encap_cfg *c, const struct tunnel *tn, uint8_t *inner,
		      size_t len, const uint8_t *tail, size_t tail_len, uint32_t seq);

/*
 * The GRE part of decap, for GRE-in-UDP, where the socket has checked the outer headers:
 * gre_len bytes of GRE header and payload (0 for an empty datagram: DROP_ZERO_LENGTH) from
 * outer source src (c->family's), any address: with a table, tunnels_decap checks it with
 * the key (DROP_UNKNOWN_PEER, DROP_BAD_KEY); without, it must be c->remote.
 */
struct decap_result;
enum drop_reason decap_gre(const struct encap_cfg *c, const struct tunnels *t, const uint8_t *src,
			   const uint8_t *gre, size_t gre_len, struct decap_result *r);

struct decap_result {
	const uint8_t *inner;
	size_t inner_len;
	struct ip_info ip; /* the inner IP header, as decap checked it */
	uint16_t proto;	   /* GRE_PROTO_IPV4 or GRE_PROTO_IPV6 */
	bool has_seq;
	uint32_t seq;
	/* The tunnel it came through, once the outer source and key found it (a drop after
	 * that is the tunnel's to count); else NULL. */
	const struct tunnel *tn;
};

/*
 * Checks and decapsulates a packet from the wire: pkt starts at the outer IP header, caplen
 * bytes of it were captured of wirelen on the wire. t is the tunnel table (tunnels_decap
 * finds the tunnel of the outer source and key, whose flags then apply; NULL: c's own peer,
 * key and flags, the one tunnel). Returns DROP_NONE with *r pointing into pkt, or the reason
 * to drop it. Checks in order: truncation, outer header, fragment, outer destination, a GRE
 * payload at all, GRE version, flags, peer and key (DROP_UNKNOWN_PEER, DROP_BAD_KEY),
 * sequence, checksum, payload protocol, inner header, inner source (the tunnel's prefixes
 * with c->tunnel_sources, else allowed; not another tunnel's, not our own:
 * DROP_SPOOFED_SOURCE), inner destination
 * (not the tunnel subnet but for our own address: DROP_TUNNEL_LOOP). With c->udp (a packet
 * ring's GRE-in-UDP) the outer payload is UDP to c->udp_port, its length the payload's
 * (else DROP_BAD_OUTER), holding the GRE packet; its checksum the caller's to check.
 */
enum drop_reason decap(const struct encap_cfg *c, const struct tunnels *t, const uint8_t *pkt,
		       size_t caplen, size_t wirelen, struct decap_result *r);

/*
 * decap for a superpacket of len bytes that the kernel's GRO merged from the peer's packets
 * (rx.h): the same checks, but for the GRE checksum, which the kernel checked on every packet
 * it merged; the merged header keeps the first packet's.
 */
enum drop_reason decap_merged(const struct encap_cfg *c, const struct tunnels *t,
			      const uint8_t *pkt, size_t len, struct decap_result *r);

#endif
