/*
 * Internet checksums (RFC 1071, incremental update per RFC 1624) and the IPv4, IPv6, UDP, TCP
 * and ICMP header fields that more than one part reads: the gateway, the wire audit and the
 * tests' packet builders, by name, so that no code writes an offset as a bare number. Pure
 * functions on caller-owned buffers.
 */
#ifndef TUNBED_INET_H
#define TUNBED_INET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/*
 * The DS field (RFC 2474, 3): IPv4's TOS byte, IPv6's traffic class (in the header's first 16
 * bits, after the version). Its six high bits are the DSCP, its two low bits the ECN field
 * (RFC 3168, 5), one of these codepoints.
 */
enum ip_ecn {
	IP_ECN_NOT_ECT = 0,
	IP_ECN_ECT1 = 1,
	IP_ECN_ECT0 = 2,
	IP_ECN_CE = 3,
};

enum {
	IP_ECN_MASK = 0x03,
	IP_DSCP_SHIFT = 2,
	IP_DSCP_MAX = 63,
	IPV6_TCLASS_SHIFT = 4,
};

/* The Ethernet header's EtherType, after the two addresses (IEEE 802.3). */
enum { ETH_TYPE_OFF = 12 };

/* Header lengths: the fixed IPv4 header without options, the fixed IPv6 header. */
enum {
	IPV4_HLEN = 20, /* RFC 791, 3.1 */
	IPV6_HLEN = 40, /* RFC 8200, 3 */
	UDP_HLEN = 8,	/* RFC 768 */
	TCP_HLEN = 20,	/* RFC 9293, 3.1: without options */
	ICMP_HLEN = 8,	/* RFC 792, RFC 4443: type, code, checksum and one word */
	IPPROTO_GRE_NUM = 47,
};

/* Field offsets of the IPv4 header (RFC 791, 3.1); byte 0 holds version and IHL. */
enum {
	IPV4_TOS_OFF = 1,
	IPV4_TOT_LEN_OFF = 2,
	IPV4_ID_OFF = 4,
	IPV4_FRAG_OFF = 6, /* flags (IPV4_DF, IPV4_MF) and fragment offset, 16 bits */
	IPV4_TTL_OFF = 8,
	IPV4_PROTO_OFF = 9,
	IPV4_CSUM_OFF = 10,
	IPV4_SRC_OFF = 12,
	IPV4_DST_OFF = 16,
};

/* The 16 bits at IPV4_FRAG_OFF. */
enum {
	IPV4_DF = 0x4000,
	IPV4_MF = 0x2000,
	IPV4_OFFMASK = 0x1fff,
};

/*
 * Field offsets of the IPv6 header (RFC 8200, 3); bytes 0 to 3 hold version, traffic class
 * and flow label.
 */
enum {
	IPV6_PLEN_OFF = 4, /* payload length: what follows the fixed header */
	IPV6_NEXT_OFF = 6, /* next header */
	IPV6_HOPS_OFF = 7, /* hop limit */
	IPV6_SRC_OFF = 8,
	IPV6_DST_OFF = 24,
};

/*
 * IPv6 extension headers (RFC 8200, 4): those with options (hop-by-hop, destination), the
 * routing and the fragment header share their first two bytes; offsets from their own start.
 */
enum {
	IPV6_EXT_NEXT_OFF = 0, /* next header */
	IPV6_EXT_LEN_OFF = 1,  /* length in 8-byte units, not counting the first 8 */
	IPV6_EXT_UNIT = 8,     /* and the fragment header's whole length */
};

/*
 * Options of a hop-by-hop or destination options header (RFC 8200, 4.2): type, length,
 * data; Pad1 is a type byte alone. The type's two high bits say what a node that does not
 * know it does: 00 skip it, anything else discard the packet.
 */
enum {
	IPV6_OPT_PAD1 = 0,
	IPV6_OPT_PADN = 1,
	IPV6_OPT_TUNNEL_LIMIT = 4, /* RFC 2473: one byte, the encapsulations left */
	IPV6_OPT_ACTION_SHIFT = 6,
};

/* The IPv6 fragment header (RFC 8200, 4.5): its offsets from its own start. */
enum {
	IPV6_FRAG_NEXT_OFF = 0, /* the next header of the packet that was fragmented */
	IPV6_FRAG_HLEN = 8,
};

/* Field offsets of the UDP header (RFC 768). */
enum {
	UDP_SPORT_OFF = 0,
	UDP_DPORT_OFF = 2,
	UDP_LEN_OFF = 4,
	UDP_CSUM_OFF = 6,
};

/* Field offsets of the TCP header (RFC 9293, 3.1). */
enum {
	TCP_SPORT_OFF = 0,
	TCP_DPORT_OFF = 2,
	TCP_SEQ_OFF = 4,
	TCP_ACK_OFF = 8,
	TCP_DOFF_OFF = 12, /* data offset: the header length in words, in the high nibble */
	TCP_FLAGS_OFF = 13,
	TCP_WINDOW_OFF = 14,
	TCP_CSUM_OFF = 16,
	TCP_URG_OFF = 18, /* urgent pointer */
};

/* TCP, UDP, UDP-Lite and SCTP alike open with the two ports: code that reads any uses these. */
enum {
	L4_SPORT_OFF = 0,
	L4_DPORT_OFF = 2,
	L4_PORTS_LEN = 4,
};

/* The TCP flags, the byte at TCP_FLAGS_OFF (RFC 9293, 3.1; ECE and CWR: RFC 3168). */
enum tcp_flags {
	TCP_F_FIN = 0x01,
	TCP_F_SYN = 0x02,
	TCP_F_RST = 0x04,
	TCP_F_PSH = 0x08,
	TCP_F_ACK = 0x10,
	TCP_F_URG = 0x20,
	TCP_F_ECE = 0x40,
	TCP_F_CWR = 0x80,
};

/*
 * Field offsets of ICMP (RFC 792) and ICMPv6 (RFC 4443) messages; the too-big errors carry
 * the MTU in their second word: ICMP's in its low half (RFC 1191), ICMPv6's as all of it.
 */
enum {
	ICMP_TYPE_OFF = 0,
	ICMP_CODE_OFF = 1,
	ICMP_CSUM_OFF = 2,
	ICMP4_MTU_OFF = 6,
	ICMP6_MTU_OFF = 4,
};

/* The length of the fixed IP header of family (AF_INET or AF_INET6). */
static inline unsigned ip_fixed_hlen(int family)
{
	return family == AF_INET6 ? IPV6_HLEN : IPV4_HLEN;
}

/* The length of an address of family: 4 or 16. */
static inline unsigned ip_addr_len(int family)
{
	return family == AF_INET6 ? 16 : 4;
}

/* Where the source address lies in the IP header of family; the destination follows it. */
static inline unsigned ip_src_off(int family)
{
	return family == AF_INET6 ? IPV6_SRC_OFF : IPV4_SRC_OFF;
}

static inline unsigned ip_dst_off(int family)
{
	return family == AF_INET6 ? IPV6_DST_OFF : IPV4_DST_OFF;
}

/* Where the protocol (IPv4) or next header (IPv6) lies in the IP header of family. */
static inline unsigned ip_proto_off(int family)
{
	return family == AF_INET6 ? IPV6_NEXT_OFF : IPV4_PROTO_OFF;
}

/* Where the TTL (IPv4) or hop limit (IPv6) lies in the IP header of family. */
static inline unsigned ip_ttl_off(int family)
{
	return family == AF_INET6 ? IPV6_HOPS_OFF : IPV4_TTL_OFF;
}

/*
 * The DS field of the IPv4 or IPv6 header at p, which holds at least its first two bytes; the
 * version decides which field.
 */
uint8_t ip_dsfield(const uint8_t *p);

/* The name of an ECN codepoint, as options and reports spell it: "not-ect", "ect1", "ect0",
 * "ce". */
const char *ip_ecn_name(unsigned ecn);

/* The codepoint (enum ip_ecn) that name is, or -EINVAL. */
int ip_ecn_parse(const char *name);

/*
 * One's complement sum of data added to sum, not yet folded. Call repeatedly over the parts
 * of a message; every part but the last must have an even length.
 */
uint32_t inet_csum_add(uint32_t sum, const void *data, size_t len);

/* Folds a sum to 16 bits and complements it: the value to store in a checksum field. */
uint16_t inet_csum_fold(uint32_t sum);

/* inet_csum_fold(inet_csum_add(0, data, len)): 0 over data whose checksum field is right. */
uint16_t inet_csum(const void *data, size_t len);

/* The checksum field value after a 16-bit word changes from old to new (RFC 1624, eqn. 3). */
uint16_t inet_csum_replace16(uint16_t csum, uint16_t old, uint16_t new);

/* Sum of the TCP/UDP pseudo-header for family (AF_INET/AF_INET6), not folded. */
uint32_t inet_pseudo_sum(int family, const uint8_t *src, const uint8_t *dst, uint8_t proto,
			 uint32_t len);

/*
 * A transport checksum left partial (the kernel's CHECKSUM_PARTIAL, a virtio header's
 * NEEDS_CSUM): its field, offset bytes past start, holds the pseudo-header's sum, and whoever
 * completes it sums from start to the end of the packet. start counts from the IP header;
 * 0 when the checksum is complete.
 */
struct l4_csum {
	uint16_t start;
	uint16_t offset;
};

/*
 * Completes a partial checksum c of a packet whose bytes from c.start on are head (head_len
 * bytes, even when tail follows: a segment's headers) and then tail (tail_len bytes, may be
 * NULL with 0). head starts at c.start. A UDP checksum that comes out zero is sent as all
 * ones (RFC 768). The caller has checked that the field lies within head.
 */
void inet_csum_finish(uint8_t *head, size_t head_len, const uint8_t *tail, size_t tail_len,
		      struct l4_csum c);

/* An IP header as read by ip_parse, in host order. */
struct ip_info {
	int family;		  /* AF_INET or AF_INET6 */
	unsigned hlen;		  /* header length; for IPv6 the fixed 40 bytes only */
	unsigned tot_len;	  /* header plus payload, from the header */
	uint8_t proto;		  /* protocol, or IPv6 next header */
	uint8_t ttl;		  /* or hop limit */
	uint8_t tos;		  /* or traffic class */
	bool df;		  /* IPv4 don't-fragment; IPv6 never fragments in transit */
	bool fragment;		  /* IPv4 MF or offset set */
	const uint8_t *src, *dst; /* into the buffer: 4 or 16 bytes */
};

/*
 * Parses the IP header at p: version, header length and total length are checked against
 * len (the bytes available). Pure. Returns the header length, or -ENODATA (p holds less than
 * a header or than the total length it claims), -EPROTO (not IPv4 or IPv6, or the IPv4 header
 * length is below 20) or -EBADMSG (IPv4 header checksum wrong; only when check_csum).
 */
int ip_parse(const uint8_t *p, size_t len, bool check_csum, struct ip_info *out);

/*
 * Where the checksum of an IP packet's TCP or UDP header lies (ip from ip_parse of its len bytes):
 * the transport header right after the IP header (IPv6: no extension header), not a
 * fragment, the whole header there. Returns false for anything else.
 */
bool inet_l4_csum_at(size_t len, const struct ip_info *ip, struct l4_csum *c);

/*
 * Whether the transport checksum at c (from inet_l4_csum_at) of the packet at pkt (its IP
 * header as ip) is left partial: its field holds the pseudo-header's sum, as a sender's stack
 * leaves it for a device to complete. A complete checksum that happens to equal that sum (one
 * in 65536) comes out of a completion the same, over data that came intact.
 */
bool inet_l4_csum_left_partial(const uint8_t *pkt, const struct ip_info *ip, struct l4_csum c);

/*
 * Marks an ECN-capable IPv4 or IPv6 packet Congestion Experienced (RFC 3168), keeping the
 * IPv4 header checksum right. Returns false, changing nothing, for a packet that is not
 * ECN-capable (Not-ECT) or too short to hold its IP header.
 */
bool ip_ecn_set_ce(uint8_t *p, size_t len);

#endif
