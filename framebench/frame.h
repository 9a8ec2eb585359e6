/*
 * The test frame of tunbed-framebench, pure: Ethernet, IPv4 (198.18.0.1 to 198.18.0.2), GRE
 * (RFC 2784) or UDP to port 4754 and GRE (GRE-in-UDP, RFC 8086), inner IPv4 (198.19.0.1 to
 * 198.19.0.2) and TCP with a payload, the shape of a full-sized segment gregw sends, or of a
 * superpacket of such segments; the virtio header that hands a superpacket to a TAP; and the
 * check a receiver makes of a frame.
 */
#ifndef TUNBED_FB_FRAME_H
#define TUNBED_FB_FRAME_H

#include <linux/if_ether.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gre.h"
#include "inet.h"
#include "uapi_newer.h"

/* The layers of a frame after its Ethernet header. */
enum frame_encap {
	FRAME_GRE,     /* IPv4, GRE, inner IPv4, TCP: the default */
	FRAME_GRE_UDP, /* IPv4, UDP, GRE, inner IPv4, TCP */
	FRAME_TCP,     /* the inner IPv4 and TCP alone: what a tcx program puts in GRE */
};

/* Offsets of a FRAME_GRE frame. */
enum {
	FRAME_OUTER_OFF = ETH_HLEN,
	FRAME_INNER_OFF = FRAME_OUTER_OFF + IPV4_HLEN + GRE_HLEN_MIN,
	FRAME_L4_OFF = FRAME_INNER_OFF + IPV4_HLEN, /* the inner TCP header */
	FRAME_HLEN = FRAME_L4_OFF + TCP_HLEN,	    /* every header: the payload starts here */
};

enum {
	FRAME_UDP_SPORT = 49152,	  /* a fixed source port, the first dynamic one */
	FRAME_LEN_MAX = ETH_HLEN + 65535, /* an IPv4 total length is 16 bits */
};

/* The outer addresses of every test frame, network order. */
extern const uint8_t frame_outer_src[4], frame_outer_dst[4];

struct frame_spec {
	uint8_t dst[ETH_ALEN], src[ETH_ALEN];
	size_t len; /* the whole frame or superpacket, frame_hlen(encap) to FRAME_LEN_MAX */
	enum frame_encap encap;
};

/* Where the inner IPv4 header of a frame of encap starts; its TCP header is 20 bytes on. */
size_t frame_inner_off(enum frame_encap encap);

/* The length of every header of a frame of encap: its payload starts there. */
size_t frame_hlen(enum frame_encap encap);

/*
 * Writes the frame_hlen(spec->encap) bytes of headers of the frame of spec at buf (room
 * bytes), every length that of spec->len, its inner TCP checksum partial: the pseudo-header's
 * sum, for a device to complete (frame_csum_complete does it in software). Returns the
 * headers' length, or -ENOSPC, or -EINVAL for a length out of range.
 */
int frame_build_headers(uint8_t *buf, size_t room, const struct frame_spec *spec);

/* Writes len bytes of the payload's pattern at p. */
void frame_payload_fill(uint8_t *p, size_t len);

/*
 * Writes the whole frame of spec at buf (room bytes): frame_build_headers, then the payload.
 * Returns its length, or as frame_build_headers.
 */
int frame_build(uint8_t *buf, size_t room, const struct frame_spec *spec);

/*
 * Completes the partial inner TCP checksum of the FRAME_GRE frame whose headers (from
 * frame_build_headers) are at hdr and whose payload_len bytes of payload are at payload
 * (right after them, or elsewhere).
 */
void frame_csum_complete(uint8_t *hdr, const uint8_t *payload, size_t payload_len);

/*
 * Fills the virtio header (struct virtio_net_hdr_v1_hash_tunnel, 24 bytes, as a TAP reads
 * it after TUNSETVNETHDRSZ 24) that hands the superpacket of spec, with its headers from
 * frame_build_headers, to a TAP: cut into segments of gso_size bytes of TCP payload, its inner
 * checksum partial. FRAME_GRE_UDP is GSO over a UDP tunnel (TCPV4 | UDP_TUNNEL_IPV4, the
 * outer UDP checksum zero, with the offsets of the outer UDP and the inner IPv4 headers);
 * FRAME_TCP plain TCP (TCPV4). A superpacket of no more than gso_size bytes of payload gets
 * no GSO type, as the kernel would take it. Returns 0, or -EINVAL for FRAME_GRE (nothing in
 * the header says how to cut GRE) or a gso_size of 0.
 */
int frame_vnet_build(struct virtio_net_hdr_v1_hash_tunnel *h, const struct frame_spec *spec,
		     unsigned gso_size);

/*
 * The most segments of seg_len-byte frames of encap (FRAME_GRE or FRAME_GRE_UDP, as on the
 * wire) that one superpacket can carry: its outer IPv4 packet at most 65535 bytes. 0 if
 * seg_len leaves no payload.
 */
unsigned frame_segs_max(enum frame_encap encap, size_t seg_len);

/* A received test frame, as frame_parse read it. */
struct frame_info {
	enum frame_encap encap; /* FRAME_GRE or FRAME_GRE_UDP */
	size_t l4_off;		/* the inner TCP header */
	size_t hlen;		/* every header, the TCP options included: the payload's start */
};

/*
 * Reads a received frame of len bytes of which the first caplen are at f (a ring's slot may
 * hold less than the frame): an IPv4 GRE or GRE-in-UDP frame carrying IPv4 TCP, every
 * header within caplen, every length consistent with len. Returns 0 or -EPROTO (not a test
 * frame).
 */
int frame_parse(const uint8_t *f, size_t caplen, size_t len, struct frame_info *out);

/*
 * Checks a received frame of len bytes: frame_parse, with verify also the inner TCP
 * checksum. Returns 0, -EPROTO (not a test frame) or -EBADMSG (a wrong checksum: one left
 * partial, when nothing said so).
 */
int frame_check(const uint8_t *f, size_t len, bool verify);

#endif
