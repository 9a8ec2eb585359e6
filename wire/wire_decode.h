/*
 * Decoding of one captured frame for the wire audit (docs/wire.md): link header, outer IPv4
 * (RFC 791) or IPv6 (RFC 8200), GRE (RFC 2784, RFC 2890) directly or in UDP (RFC 8086), and
 * the inner packet, each checked against what the tunnel is expected to carry. Pure: no I/O,
 * no allocation; the frame points into the caller's buffer.
 */
#ifndef TUNBED_WIRE_DECODE_H
#define TUNBED_WIRE_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flow.h"
#include "gre.h"
#include "wire_limits.h"
#include "netaddr.h"
#include "wire_tunnels.h"

/* Link types the decoder reads: the libpcap DLT_ values, kept here so it needs no pcap.h. */
enum wire_link {
	WIRE_LINK_NULL = 0,	    /* DLT_NULL: 4-byte host-order address family */
	WIRE_LINK_ETHER = 1,	    /* DLT_EN10MB */
	WIRE_LINK_RAW = 101,	    /* LINKTYPE_RAW (DLT_RAW varies by platform) */
	WIRE_LINK_LINUX_SLL = 113,  /* Linux cooked capture, v1 */
	WIRE_LINK_IPV4 = 228,	    /* raw IPv4 */
	WIRE_LINK_IPV6 = 229,	    /* raw IPv6 */
	WIRE_LINK_LINUX_SLL2 = 276, /* Linux cooked capture, v2 */
};

/* Everything a frame can be found guilty of; one frame may have several. */
enum wire_violation {
	WIRE_V_TRUNCATED,	/* ends before a header or packet it announces */
	WIRE_V_BAD_OUTER,	/* outer IP header malformed or its IPv4 checksum wrong */
	WIRE_V_FRAGMENT,	/* outer IPv4 MF or offset, or an IPv6 fragment header */
	WIRE_V_BAD_PEER,	/* outer addresses are not the tunnel's two ends (--tunnels: local
				 * and a tunnel's peer) */
	WIRE_V_BAD_UDP,		/* GRE-in-UDP: UDP length or checksum wrong */
	WIRE_V_BAD_GRE,		/* GRE version not 0 or a reserved bit set */
	WIRE_V_NO_KEY,		/* a key is expected and absent (--tunnels: the peer's tunnels all
				 * have one) */
	WIRE_V_BAD_KEY,		/* a key is present and not the expected one, or none is expected
				 * (--tunnels: no tunnel of the peer has it) */
	WIRE_V_NO_SEQ,		/* sequence numbers are expected and this frame has none */
	WIRE_V_UNEXPECTED_SEQ,	/* sequence numbers are not expected and this frame has one */
	WIRE_V_NO_CSUM,		/* checksums are expected and this frame has none */
	WIRE_V_UNEXPECTED_CSUM, /* checksums are not expected and this frame has one */
	WIRE_V_BAD_CSUM,	/* GRE checksum present and wrong */
	WIRE_V_BAD_PROTO,	/* GRE carries neither IPv4 nor IPv6 */
	WIRE_V_BAD_INNER,	/* inner packet malformed or of the other family than GRE says */
	WIRE_V_INNER_TOO_BIG,	/* inner packet longer than the tunnel MTU */
	WIRE_V_ECN_NOT_COPIED,	/* an ECN-capable inner packet in a Not-ECT outer header */
	WIRE_V_ECN_CE_RESET,	/* CE inside, ECT(0) outside: RFC 3168's full functionality */
	WIRE_V_ECN_MISMATCH,	/* any other outer ECN field no encapsulator or path should make */
	WIRE_V_BAD_DSCP,	/* the outer DSCP is not the inner one (inherit) or the one given */
	WIRE_V_BAD_TTL,		/* the outer TTL is not the inner one (inherit) or the one given */
	WIRE_V_MAX
};

/* What an expectation asks of an optional GRE field. */
enum wire_want {
	WIRE_WANT_ANY = 0, /* not checked */
	WIRE_WANT_YES,
	WIRE_WANT_NO,
};

/* What an expectation asks of an outer header field the encapsulator sets. */
enum wire_field {
	WIRE_FIELD_ANY = 0, /* not checked */
	WIRE_FIELD_INHERIT, /* the inner packet's, copied */
	WIRE_FIELD_FIXED,   /* the value given */
};

struct wire_expect {
	bool has_peers;	       /* local and remote are set (given, or learned) */
	struct netaddr local;  /* one end of the tunnel: direction 0 runs local to remote */
	struct netaddr remote; /* the other end */
	enum wire_want key, seq, csum;
	uint32_t key_value; /* with key == WIRE_WANT_YES */
	unsigned mtu;	    /* largest inner packet; 0: not checked */
	unsigned link_mtu;  /* largest outer IP packet the link carries: a TCP superpacket in one
			     * GRE packet longer than that counts as its segments; 0: unknown */
	uint16_t udp_port;  /* GRE-in-UDP destination port */
	bool ecn;	    /* RFC 6040's normal mode: the outer ECN field copies the inner one */
	enum wire_field dscp, ttl;
	uint8_t dscp_value; /* with dscp == WIRE_FIELD_FIXED: 0 to 63 */
	uint8_t ttl_value;  /* with ttl == WIRE_FIELD_FIXED: 1 to 255 */
	/* --tunnels: the frames run between local and the tunnels' peers (remote unused), each
	 * checked against its tunnel (its peer and key: key, seq and csum are the tunnel's);
	 * NULL: the one tunnel of local, remote and key, seq, csum. */
	const struct wire_tunnels *tunnels;
};

enum wire_encap {
	WIRE_ENCAP_NONE = 0, /* not tunnel traffic (ARP, other IP, other UDP), or not knowable */
	WIRE_ENCAP_GRE,	     /* GRE straight in IP */
	WIRE_ENCAP_GRE_UDP,  /* GRE in UDP */
};

/*
 * One decoded datagram. A captured frame is one datagram, except a GSO super-frame of
 * GRE-in-UDP: a UDP payload of several GRE packets back to back, as one UDP_SEGMENT send hands
 * them to a device that segments (a veth pair carries it whole). wire_decode then describes
 * the first GRE packet and sets next; wire_decode_next the following ones. Each is described
 * as the datagram a segmenting NIC would have sent: the frame's link, outer IP and UDP headers
 * followed by that GRE packet alone.
 */
struct wire_frame {
	unsigned violations;	 /* bit (1u << enum wire_violation) per violation; 0 if not GRE */
	enum wire_encap encap;	 /* what the frame turned out to be, as far as it was read */
	bool snapped;		 /* the capture kept less than the frame: later checks skipped */
	int dir;		 /* 0: local to remote, 1: remote to local, -1: neither / unknown */
	unsigned frame_len;	 /* on the link, link header included; of this datagram alone */
	unsigned outer_len;	 /* outer IP packet, header included; of this datagram alone */
	struct netaddr src, dst; /* family 0: the outer addresses were not read */
	int tunnel;		 /* with e->tunnels: the index of its tunnel, or -1 (bad_peer,
				  * no_key, bad_key, or its GRE header not read) */
	bool has_sport;		 /* GRE-in-UDP with its UDP header read (not a later fragment) */
	uint16_t udp_sport;	 /* the outer source port: the flow entropy */
	bool udp_csum_offloaded; /* the UDP checksum is the pseudo-header sum: left to offload */
	size_t next;		 /* GSO super-frame: offset of the next GRE packet; 0: none */
	size_t next_len;	 /* from next to the end of the UDP payload */
	unsigned link_hlen;	 /* set with next: the link header's length */
	unsigned outer_hlen;	 /* set with next: outer IP and extension headers, UDP header */
	bool has_outer_ds;	 /* the outer header was read: outer_ds and outer_ttl are valid */
	uint8_t outer_ds;	 /* its DS field (DSCP and ECN) */
	uint8_t outer_ttl;	 /* its TTL or hop limit */
	bool has_gre;		 /* the GRE header was read: gre is valid */
	struct gre_info gre;
	bool has_inner; /* inner is a well-formed IP packet: inner_len and flow are valid */
	unsigned inner_len;
	uint8_t inner_ds, inner_ttl; /* the inner header's DS field and TTL or hop limit */
	struct flow_key flow;	     /* end 0 the source, end 1 the destination (flow.h) */
	bool has_tcp;		     /* inner TCP header read */
	uint32_t tcp_seq;
	uint32_t tcp_payload; /* TCP payload bytes */
	uint8_t tcp_flags;
	bool has_ip_id; /* inner IPv4: ip_id is its identification field */
	uint16_t ip_id;
	/* A TCP superpacket in one GRE packet longer than the link carries (e->link_mtu): what
	 * a NIC cutting it to fit the link would send. segs 0: one packet. */
	unsigned segs;	    /* its segments */
	unsigned seg_outer; /* each one's outer headers: IP (and extension headers), UDP, GRE */
	unsigned seg_inner; /* each one's inner IP and TCP headers */
	unsigned seg_mss;   /* each one's TCP payload, the last one's the rest */
};

/*
 * Sets the defaults: nothing expected but RFC 6040's normal mode (ecn), GRE-in-UDP on port
 * 4754.
 */
void wire_expect_init(struct wire_expect *e);

/*
 * Decodes the frame at p: caplen bytes captured of a frame len bytes long on a link of type
 * link (enum wire_link), against e. A frame is the tunnel's (encap set) when what can be read
 * of it says GRE: IP protocol 47, UDP to e->udp_port, or an outer fragment of either; only
 * then can it have violations, and be judged against the peers when its addresses were read.
 * Anything else, also a frame whose protocol cannot be read, is WIRE_ENCAP_NONE with no
 * violations. A GRE-in-UDP frame whose GRE packet (header and inner packet by its length)
 * ends before the UDP payload does, followed by another GRE header of the same flags and
 * protocol type, is a GSO super-frame: out describes its first datagram and out->next is set
 * (see struct wire_frame). A UDP checksum equal to the pseudo-header sum (what a sender that
 * leaves the checksum to the device stores, CHECKSUM_PARTIAL) sets udp_csum_offloaded, not
 * bad_udp. Pure. Returns 0 with *out filled, or -EPROTONOSUPPORT for a link type it does not
 * read.
 */
int wire_decode(const struct wire_expect *e, int link, const uint8_t *p, size_t caplen, size_t len,
		struct wire_frame *out);

/*
 * Decodes the datagram at prev->next of the frame prev came from (p, caplen and len as given
 * to wire_decode): a GSO super-frame's next GRE packet, checked as wire_decode checks one, with
 * the outer headers, direction and source port of prev. Only the GRE packet's violations are
 * set; those of the outer headers were prev's. out may be prev. Pure. Returns 0 with *out
 * filled, or -EINVAL if prev has no next datagram in a frame of len bytes.
 */
int wire_decode_next(const struct wire_expect *e, const uint8_t *p, size_t caplen, size_t len,
		     const struct wire_frame *prev, struct wire_frame *out);

/* The name of a violation as in the JSON ("bad_key"), or "?" */
const char *wire_violation_name(enum wire_violation v);

/* The libpcap name of a supported link type ("EN10MB"), or NULL if unsupported. */
const char *wire_link_name(int link);

#endif
