/*
 * GRE headers: RFC 2784 (base header, checksum) and RFC 2890 (key and sequence number).
 * Parse into a host-order struct gre_info and build from one; pure, on caller buffers.
 *
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * |C| |K|S| Reserved0       | Ver |         Protocol Type         |
 * |      Checksum (optional)      |       Reserved1 (optional)    |
 * |                         Key (optional)                        |
 * |                 Sequence Number (optional)                    |
 */
#ifndef TUNBED_GRE_H
#define TUNBED_GRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum gre_flags {
	GRE_F_CSUM = 1u << 0,
	GRE_F_KEY = 1u << 1,
	GRE_F_SEQ = 1u << 2,
};

enum {
	GRE_HLEN_MIN = 4,
	GRE_HLEN_MAX = 16,
	GRE_PROTO_OFF = 2, /* the protocol type, after the 16 bits of flags and version */
	GRE_CSUM_OFF = 4,  /* the checksum, the first option when C is set */
	GRE_OPT_LEN = 4,   /* each option: checksum with reserved1, key, sequence number */
	GRE_PROTO_IPV4 = 0x0800,
	GRE_PROTO_IPV6 = 0x86dd,
	GRE_UDP_PORT = 4754, /* GRE-in-UDP's destination port (RFC 8086, 3) */
	/* Bits of the first 16: C, K and S are ours; version is the low three. */
	GRE_BIT_C = 0x8000,
	GRE_BIT_R = 0x4000, /* RFC 1701 routing present */
	GRE_BIT_K = 0x2000,
	GRE_BIT_S = 0x1000,
	GRE_RESERVED0 = 0x4ff8, /* R, strict source route, recursion, flags: all must be 0 */
	GRE_VERSION = 0x0007,
};

struct gre_info {
	unsigned flags; /* enum gre_flags */
	uint16_t proto; /* EtherType of the payload */
	uint16_t csum;	/* as received; 0 when building (see gre_csum_fill) */
	uint32_t key;
	uint32_t seq;
};

/* Header length for a set of enum gre_flags: 4 plus 4 per optional field. */
size_t gre_hlen(unsigned flags);

/*
 * Parses the GRE header at p (len bytes available). Pure. Returns the header length, or:
 *   -ENODATA          p ends before the header (with the options its flags announce) does;
 *   -EPROTONOSUPPORT  version is not 0 (1 is PPTP's enhanced GRE);
 *   -EINVAL           a reserved bit is set: routing, strict source route, recursion or any
 *                     of the flag bits 8-12. RFC 2784 would ignore bits 6-12 on receipt;
 *                     tunbed refuses them, so that a peer's stray bits are seen and counted.
 */
int gre_parse(const uint8_t *p, size_t len, struct gre_info *out);

/*
 * Writes the header of info at p (room bytes). The checksum field is written as zero: fill
 * it with gre_csum_fill once the payload follows. Returns the header length or -ENOSPC.
 */
int gre_build(uint8_t *p, size_t room, const struct gre_info *info);

/* Computes and stores the checksum of a GRE packet (header at p, len bytes with payload). */
void gre_csum_fill(uint8_t *p, size_t len);

/* True if the checksum of the GRE packet at p (len bytes with payload) is right. */
bool gre_csum_ok(const uint8_t *p, size_t len);

#endif
