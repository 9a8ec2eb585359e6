/*
 * The test frame of tunbed-framebench, pure: Ethernet, IPv4 (198.18.0.1 to 198.18.0.2), GRE
 * (RFC 2784), inner IPv4 (198.19.0.1 to 198.19.0.2) and TCP with a payload, the shape of a
 * full-sized segment gregw sends; and the check a receiver makes of it.
 */
#ifndef TUNBED_FB_FRAME_H
#define TUNBED_FB_FRAME_H

#include <linux/if_ether.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gre.h"
#include "inet.h"

enum {
	FRAME_OUTER_OFF = ETH_HLEN,
	FRAME_INNER_OFF = FRAME_OUTER_OFF + IPV4_HLEN + GRE_HLEN_MIN,
	FRAME_L4_OFF = FRAME_INNER_OFF + IPV4_HLEN, /* the inner TCP header */
	FRAME_HLEN = FRAME_L4_OFF + TCP_HLEN,	    /* every header: the payload starts here */
};

/* The outer addresses of every test frame, network order. */
extern const uint8_t frame_outer_src[4], frame_outer_dst[4];

struct frame_spec {
	uint8_t dst[ETH_ALEN], src[ETH_ALEN];
	size_t len; /* the whole frame, FRAME_HLEN to ETH_FRAME_LEN */
};

/*
 * Writes the FRAME_HLEN bytes of headers of the frame of spec at buf (room bytes), its inner
 * TCP checksum partial: the pseudo-header's sum, for a device to complete from FRAME_L4_OFF
 * (frame_csum_complete does it in software). Returns FRAME_HLEN, or -ENOSPC, or -EINVAL for a
 * length out of range.
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
 * Completes the partial inner TCP checksum of the frame whose headers (from
 * frame_build_headers) are at hdr and whose payload_len bytes of payload are at payload
 * (right after them, or elsewhere).
 */
void frame_csum_complete(uint8_t *hdr, const uint8_t *payload, size_t payload_len);

/*
 * Checks a received frame of len bytes: an IPv4 GRE frame carrying IPv4 TCP, its lengths
 * consistent; with verify also the inner TCP checksum. Returns 0, -EPROTO (not a test
 * frame) or -EBADMSG (a wrong checksum: one left partial, when nothing said so).
 */
int frame_check(const uint8_t *f, size_t len, bool verify);

#endif
