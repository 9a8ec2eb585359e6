/*
 * TCP MSS clamping (see mss.h).
 */
#include "mss.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include "byteorder.h"

/* TCP option kinds (RFC 9293, 3.2). */
enum {
	TCPOPT_EOL = 0,
	TCPOPT_NOP = 1,
	TCPOPT_MSS = 2,
};

static uint16_t swap16(uint16_t v)
{
	return (uint16_t)(v << 8 | v >> 8);
}

unsigned mss_for_mtu(int family, unsigned mtu)
{
	unsigned hdrs = ip_fixed_hlen(family) + TCP_HLEN;

	return mtu > hdrs ? mtu - hdrs : 0;
}

bool mss_clamp(uint8_t *pkt, size_t len, const struct ip_info *ip, unsigned max_mss,
	       bool csum_partial)
{
	uint8_t *tcp = pkt + ip->hlen, *opt, *end;
	size_t tcp_len;
	unsigned doff;

	if (ip->proto != IPPROTO_TCP || len > ip->tot_len || len < ip->hlen + TCP_HLEN)
		return false;
	if (ip->family == AF_INET && (load_be16(pkt + IPV4_FRAG_OFF) & IPV4_OFFMASK))
		return false;
	tcp_len = len - ip->hlen;
	doff = (tcp[TCP_DOFF_OFF] >> 4) * 4u;
	if (!(tcp[TCP_FLAGS_OFF] & TCP_F_SYN) || doff < TCP_HLEN || doff > tcp_len)
		return false;
	opt = tcp + TCP_HLEN;
	end = tcp + doff;
	while (opt < end) {
		uint16_t mss;

		if (*opt == TCPOPT_EOL)
			break;
		if (*opt == TCPOPT_NOP) {
			opt++;
			continue;
		}
		/* Every other option has a length byte; a bad one ends the walk, untouched. */
		if (end - opt < 2 || opt[1] < 2 || opt[1] > end - opt)
			return false;
		if (*opt == TCPOPT_MSS && opt[1] == 4) {
			mss = load_be16(opt + 2);
			if (mss <= max_mss)
				return false;
			store_be16(opt + 2, (uint16_t)max_mss);
			if (csum_partial)
				return true;
			/* After a lone NOP the value sits at an odd offset, where it adds to the
			 * sum byte-swapped. */
			if ((opt + 2 - tcp) & 1)
				store_be16(tcp + TCP_CSUM_OFF,
					   inet_csum_replace16(load_be16(tcp + TCP_CSUM_OFF),
							       swap16(mss),
							       swap16((uint16_t)max_mss)));
			else
				store_be16(tcp + TCP_CSUM_OFF,
					   inet_csum_replace16(load_be16(tcp + TCP_CSUM_OFF), mss,
							       (uint16_t)max_mss));
			return true;
		}
		opt += opt[1];
	}
	return false;
}
