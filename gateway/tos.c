/*
 * DSCP (RFC 2983), ECN (RFC 6040 normal mode; RFC 9601 for GRE and GRE-in-UDP) and TTL across
 * the tunnel, and the AQM's mark or drop (RFC 3168, RFC 8311). See tos.h.
 */
#include "tos.h"

#include <errno.h>
#include <sys/socket.h>

#include "byteorder.h"
#include "inet.h"
#include "gw_limits.h"

void tos_cfg_init(struct tos_cfg *c)
{
	c->dscp_inherit = true;
	c->dscp = 0;
	c->ttl_inherit = false;
	c->ttl = TUNNEL_TTL;
}

/* The family of the IP header at p, if len holds its fixed part; else 0. */
static int family_of(const uint8_t *p, size_t len)
{
	if (len >= IPV4_HLEN && p[0] >> 4 == 4)
		return AF_INET;
	if (len >= IPV6_HLEN && p[0] >> 4 == 6)
		return AF_INET6;
	return 0;
}

int tos_read(const uint8_t *p, size_t len, struct tos_fields *out)
{
	int family = family_of(p, len);

	if (!family)
		return -EINVAL;
	out->ds = ip_dsfield(p);
	out->ttl = p[ip_ttl_off(family)];
	return 0;
}

unsigned tos_ecn_encap(unsigned inner_ecn)
{
	return inner_ecn & IP_ECN_MASK;
}

struct tos_fields tos_encap(const struct tos_cfg *c, struct tos_fields inner)
{
	struct tos_fields out;
	uint8_t dscp = c->dscp_inherit ? (uint8_t)(inner.ds >> IP_DSCP_SHIFT) : c->dscp;

	out.ds = (uint8_t)(dscp << IP_DSCP_SHIFT | tos_ecn_encap(inner.ds));
	out.ttl = c->ttl_inherit ? inner.ttl : c->ttl;
	return out;
}

/* An IPv4 header's 16-bit word at off set to v, its checksum updated (RFC 1624, eqn. 3). */
static void ip4_word_set(uint8_t *p, unsigned off, uint16_t v)
{
	uint16_t old = load_be16(p + off);

	store_be16(p + off, v);
	store_be16(p + IPV4_CSUM_OFF, inet_csum_replace16(load_be16(p + IPV4_CSUM_OFF), old, v));
}

/* Sets the DS field of the header at p, of family; keeps an IPv4 checksum right. */
static void ds_set(uint8_t *p, int family, uint8_t ds)
{
	uint16_t w = load_be16(p);

	if (family == AF_INET6) {
		/* Version above, flow label below: only the traffic class's eight bits move. */
		w = (uint16_t)((w & 0xf00f) | ds << IPV6_TCLASS_SHIFT);
		store_be16(p, w);
		return;
	}
	ip4_word_set(p, 0, (uint16_t)((w & 0xff00) | ds));
}

int tos_write(uint8_t *p, size_t len, struct tos_fields f)
{
	int family = family_of(p, len);

	if (!family)
		return -EINVAL;
	ds_set(p, family, f.ds);
	if (family == AF_INET6)
		p[IPV6_HOPS_OFF] = f.ttl;
	else
		ip4_word_set(p, IPV4_TTL_OFF, (uint16_t)(f.ttl << 8 | p[IPV4_PROTO_OFF]));
	return 0;
}

/*
 * RFC 6040, Figure 4, by [inner][outer] codepoint (enum ip_ecn: Not-ECT 0, ECT(1) 1, ECT(0) 2,
 * CE 3). The pairs marked "(!!!)" there are ones no standard produces: a tunnel entry that
 * cleared or set ECN on its own, or a node inside that did; the RFC says to log them, and to
 * drop the CE on Not-ECT: its transport hears of congestion only through a loss.
 */
static const struct tos_decap decap_table[4][4] = {
	[IP_ECN_NOT_ECT] = {
		[IP_ECN_NOT_ECT] = { TOS_FORWARD, IP_ECN_NOT_ECT },
		[IP_ECN_ECT1] = { TOS_FORWARD_ALARM, IP_ECN_NOT_ECT },
		[IP_ECN_ECT0] = { TOS_FORWARD_ALARM, IP_ECN_NOT_ECT },
		[IP_ECN_CE] = { TOS_DROP, IP_ECN_NOT_ECT },
	},
	[IP_ECN_ECT1] = {
		[IP_ECN_NOT_ECT] = { TOS_FORWARD, IP_ECN_ECT1 },
		[IP_ECN_ECT1] = { TOS_FORWARD, IP_ECN_ECT1 },
		[IP_ECN_ECT0] = { TOS_FORWARD, IP_ECN_ECT1 },
		[IP_ECN_CE] = { TOS_FORWARD, IP_ECN_CE },
	},
	[IP_ECN_ECT0] = {
		[IP_ECN_NOT_ECT] = { TOS_FORWARD, IP_ECN_ECT0 },
		[IP_ECN_ECT1] = { TOS_FORWARD, IP_ECN_ECT1 },
		[IP_ECN_ECT0] = { TOS_FORWARD, IP_ECN_ECT0 },
		[IP_ECN_CE] = { TOS_FORWARD, IP_ECN_CE },
	},
	[IP_ECN_CE] = {
		[IP_ECN_NOT_ECT] = { TOS_FORWARD, IP_ECN_CE },
		[IP_ECN_ECT1] = { TOS_FORWARD_ALARM, IP_ECN_CE },
		[IP_ECN_ECT0] = { TOS_FORWARD, IP_ECN_CE },
		[IP_ECN_CE] = { TOS_FORWARD, IP_ECN_CE },
	},
};

struct tos_decap tos_ecn_decap(unsigned outer_ecn, unsigned inner_ecn)
{
	return decap_table[inner_ecn & IP_ECN_MASK][outer_ecn & IP_ECN_MASK];
}

int tos_set_ecn(uint8_t *p, size_t len, unsigned ecn)
{
	int family = family_of(p, len);

	if (!family)
		return -EINVAL;
	ds_set(p, family, (uint8_t)((ip_dsfield(p) & ~IP_ECN_MASK) | (ecn & IP_ECN_MASK)));
	return 0;
}

int tos_decap_apply(uint8_t outer_ds, uint8_t *p, size_t len)
{
	struct tos_decap d;
	unsigned inner;

	if (!family_of(p, len))
		return -EINVAL;
	inner = ip_dsfield(p) & IP_ECN_MASK;
	d = tos_ecn_decap(outer_ds, inner);
	if (d.verdict != TOS_DROP && d.ecn != inner)
		tos_set_ecn(p, len, d.ecn);
	return (int)d.verdict;
}

enum tos_aqm tos_aqm_signal(unsigned ecn)
{
	return (ecn & IP_ECN_MASK) == IP_ECN_NOT_ECT ? TOS_AQM_DROP : TOS_AQM_MARK;
}
