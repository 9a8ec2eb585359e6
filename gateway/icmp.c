/*
 * ICMP "fragmentation needed" (RFC 792, RFC 1191) and ICMPv6 "packet too big" (RFC 4443)
 * for inner packets larger than the tunnel MTU (see icmp.h).
 */
#include "icmp.h"

#include <string.h>
#include <sys/socket.h>

#include "byteorder.h"
#include "gw_limits.h"

enum {
	ICMP4_PROTO = 1,
	ICMP6_PROTO = 58,
	ICMP4_DEST_UNREACH = 3,
	ICMP4_FRAG_NEEDED = 4,
	ICMP6_PACKET_TOO_BIG = 2,
};

/* RFC 1122 3.2.2: never an error about an error; ICMP queries are fine to answer. */
static bool is_icmp4_error(const uint8_t *pkt, size_t len, const struct ip_info *ip)
{
	uint8_t type;

	if (ip->proto != ICMP4_PROTO || len < ip->hlen + 1)
		return false;
	type = pkt[ip->hlen + ICMP_TYPE_OFF];
	return type == 3 || type == 4 || type == 5 || type == 11 || type == 12;
}

static bool v4_unicast_source(const uint8_t *a)
{
	/* Not 0/8, loopback, multicast, class E or broadcast. */
	return a[0] != 0 && a[0] != 127 && a[0] < 224;
}

/* Whether the packet may have an error (RFC 1122 3.2.2): from a TUN address to a host. */
static bool may_answer4(const struct encap_cfg *c, const uint8_t *pkt, size_t len,
			const struct ip_info *ip)
{
	uint16_t frag = load_be16(pkt + IPV4_FRAG_OFF);

	return c->has_addr4 && v4_unicast_source(ip->src) && !(frag & IPV4_OFFMASK) &&
	       !is_icmp4_error(pkt, len, ip);
}

/* Errors go to unicast sources only; an ICMPv6 error (type < 128) gets none (RFC 4443 2.4). */
static bool may_answer6(const struct encap_cfg *c, const uint8_t *pkt, size_t len,
			const struct ip_info *ip)
{
	static const uint8_t unspecified[16];

	if (!c->has_addr6 || ip->src[0] == 0xff || memcmp(ip->src, unspecified, 16) == 0)
		return false;
	return !(ip->proto == ICMP6_PROTO && len > IPV6_HLEN &&
		 pkt[IPV6_HLEN + ICMP_TYPE_OFF] < 128);
}

/* The IPv4 header and the ICMP "fragmentation needed" around the quote already at out. */
static void write4(const struct encap_cfg *c, const struct ip_info *ip, uint8_t *out, size_t total)
{
	uint8_t *icmp = out + IPV4_HLEN;

	out[0] = 0x45;
	out[IPV4_TOS_OFF] = 0xc0; /* precedence "internetwork control", as Linux sends its errors */
	store_be16(out + IPV4_TOT_LEN_OFF, (uint16_t)total);
	out[IPV4_TTL_OFF] = TUNNEL_TTL;
	out[IPV4_PROTO_OFF] = ICMP4_PROTO;
	memcpy(out + IPV4_SRC_OFF, c->addr4, 4);
	memcpy(out + IPV4_DST_OFF, ip->src, 4);
	store_be16(out + IPV4_CSUM_OFF, inet_csum(out, IPV4_HLEN));
	icmp[ICMP_TYPE_OFF] = ICMP4_DEST_UNREACH;
	icmp[ICMP_CODE_OFF] = ICMP4_FRAG_NEEDED;
	store_be16(icmp + ICMP4_MTU_OFF, (uint16_t)c->mtu);
	store_be16(icmp + ICMP_CSUM_OFF, inet_csum(icmp, total - IPV4_HLEN));
}

/* The IPv6 header and the ICMPv6 "packet too big" around the quote already at out. */
static void write6(const struct encap_cfg *c, const struct ip_info *ip, uint8_t *out, size_t total)
{
	uint8_t *icmp = out + IPV6_HLEN;
	size_t icmp_len = total - IPV6_HLEN;
	uint32_t sum;

	out[0] = 0x60;
	store_be16(out + IPV6_PLEN_OFF, (uint16_t)icmp_len);
	out[IPV6_NEXT_OFF] = ICMP6_PROTO;
	out[IPV6_HOPS_OFF] = TUNNEL_TTL;
	memcpy(out + IPV6_SRC_OFF, c->addr6, 16);
	memcpy(out + IPV6_DST_OFF, ip->src, 16);
	icmp[ICMP_TYPE_OFF] = ICMP6_PACKET_TOO_BIG;
	store_be32(icmp + ICMP6_MTU_OFF, c->mtu);
	sum = inet_pseudo_sum(AF_INET6, out + IPV6_SRC_OFF, out + IPV6_DST_OFF, ICMP6_PROTO,
			      (uint32_t)icmp_len);
	store_be16(icmp + ICMP_CSUM_OFF, inet_csum_fold(inet_csum_add(sum, icmp, icmp_len)));
}

size_t icmp_too_big(const struct encap_cfg *c, const uint8_t *pkt, size_t len,
		    const struct ip_info *ip, uint8_t *out, size_t room)
{
	bool v6 = ip->family == AF_INET6;
	size_t hlen = ip_fixed_hlen(ip->family) + ICMP_HLEN, quote = len, total;
	size_t max = v6 ? ICMP6_QUOTE_MAX : ICMP4_QUOTE_MAX;

	if (!(v6 ? may_answer6(c, pkt, len, ip) : may_answer4(c, pkt, len, ip)))
		return 0;
	if (quote > max - hlen)
		quote = max - hlen;
	total = hlen + quote;
	if (room < total)
		return 0;
	memset(out, 0, hlen);
	memcpy(out + hlen, pkt, quote);
	if (v6)
		write6(c, ip, out, total);
	else
		write4(c, ip, out, total);
	return total;
}
