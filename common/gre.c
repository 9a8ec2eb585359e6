/*
 * GRE header parsing and building: RFC 2784, RFC 2890 (see gre.h). After the kernel's
 * gre_parse_header: refuse version and reserved bits first, compute the length from the
 * flags, and check the buffer is that long before reading any option.
 */
#include "gre.h"

#include <errno.h>
#include <string.h>

#include "byteorder.h"
#include "inet.h"

size_t gre_hlen(unsigned flags)
{
	size_t n = GRE_HLEN_MIN;

	if (flags & GRE_F_CSUM)
		n += GRE_OPT_LEN;
	if (flags & GRE_F_KEY)
		n += GRE_OPT_LEN;
	if (flags & GRE_F_SEQ)
		n += GRE_OPT_LEN;
	return n;
}

int gre_parse(const uint8_t *p, size_t len, struct gre_info *out)
{
	uint16_t bits;
	size_t off = GRE_HLEN_MIN, need;

	if (len < GRE_HLEN_MIN)
		return -ENODATA;
	bits = load_be16(p);
	if (bits & GRE_VERSION)
		return -EPROTONOSUPPORT;
	if (bits & GRE_RESERVED0)
		return -EINVAL;
	out->flags = 0;
	if (bits & GRE_BIT_C)
		out->flags |= GRE_F_CSUM;
	if (bits & GRE_BIT_K)
		out->flags |= GRE_F_KEY;
	if (bits & GRE_BIT_S)
		out->flags |= GRE_F_SEQ;
	need = gre_hlen(out->flags);
	/* The flags promise options; a short packet must not make us read past its end. */
	if (len < need)
		return -ENODATA;
	out->proto = load_be16(p + GRE_PROTO_OFF);
	out->csum = 0;
	out->key = 0;
	out->seq = 0;
	if (out->flags & GRE_F_CSUM) {
		out->csum = load_be16(p + off);
		off += GRE_OPT_LEN;
	}
	if (out->flags & GRE_F_KEY) {
		out->key = load_be32(p + off);
		off += GRE_OPT_LEN;
	}
	if (out->flags & GRE_F_SEQ)
		out->seq = load_be32(p + off);
	return (int)need;
}

int gre_build(uint8_t *p, size_t room, const struct gre_info *info)
{
	size_t need = gre_hlen(info->flags), off = GRE_HLEN_MIN;
	uint16_t bits = 0;

	if (room < need)
		return -ENOSPC;
	if (info->flags & GRE_F_CSUM)
		bits |= GRE_BIT_C;
	if (info->flags & GRE_F_KEY)
		bits |= GRE_BIT_K;
	if (info->flags & GRE_F_SEQ)
		bits |= GRE_BIT_S;
	store_be16(p, bits);
	store_be16(p + GRE_PROTO_OFF, info->proto);
	if (info->flags & GRE_F_CSUM) {
		memset(p + off, 0, GRE_OPT_LEN);
		off += GRE_OPT_LEN;
	}
	if (info->flags & GRE_F_KEY) {
		store_be32(p + off, info->key);
		off += GRE_OPT_LEN;
	}
	if (info->flags & GRE_F_SEQ)
		store_be32(p + off, info->seq);
	return (int)need;
}

void gre_csum_fill(uint8_t *p, size_t len)
{
	store_be16(p + GRE_CSUM_OFF, 0);
	store_be16(p + GRE_CSUM_OFF, inet_csum(p, len));
}

bool gre_csum_ok(const uint8_t *p, size_t len)
{
	return inet_csum(p, len) == 0;
}
