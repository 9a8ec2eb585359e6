/*
 * ICMP and ICMPv6 echo messages of the ping probes (RFC 792, RFC 4443) and their round-trip
 * statistics (see icmp.h).
 */
#include "icmp.h"

#include <errno.h>
#include <math.h>
#include <sys/socket.h>

#include "byteorder.h"
#include "inet.h"

static int reply_type(int family)
{
	return family == AF_INET6 ? ICMP6_ECHO_REPLY : family == AF_INET ? ICMP_ECHO_REPLY : -1;
}

int icmp_echo_build(uint8_t *buf, size_t room, int family, const struct icmp_probe *probe,
		    size_t payload)
{
	uint8_t *pl = buf + ICMP_HLEN;

	if ((family != AF_INET && family != AF_INET6) || payload < ICMP_PROBE_HLEN ||
	    payload > ICMP_PAYLOAD_MAX)
		return -EINVAL;
	if (room < ICMP_HLEN + payload)
		return -ENOSPC;
	buf[ICMP_TYPE_OFF] = family == AF_INET6 ? ICMP6_ECHO_REQUEST : ICMP_ECHO_REQUEST;
	buf[ICMP_CODE_OFF] = 0;
	store_be16(buf + ICMP_CSUM_OFF, 0);
	store_be16(buf + ICMP_ECHO_ID_OFF, 0);
	store_be16(buf + ICMP_ECHO_SEQ_OFF, (uint16_t)probe->number);
	store_be32(pl + ICMP_PROBE_MAGIC_OFF, ICMP_PROBE_MAGIC);
	store_be32(pl + ICMP_PROBE_NUMBER_OFF, probe->number);
	store_be64(pl + ICMP_PROBE_TEST_OFF, probe->test_id);
	/* ping(8)'s fill: byte i of the rest is i, so that a reply shows where it was cut. */
	for (size_t i = ICMP_PROBE_HLEN; i < payload; i++)
		pl[i] = (uint8_t)i;
	return (int)(ICMP_HLEN + payload);
}

int icmp_echo_parse(const uint8_t *p, size_t len, int family, struct icmp_probe *out)
{
	const uint8_t *pl = p + ICMP_HLEN;

	if (len < ICMP_HLEN)
		return -EINVAL;
	if (p[ICMP_TYPE_OFF] != reply_type(family) || p[ICMP_CODE_OFF] != 0)
		return -ENOMSG;
	/* A ping socket hands over only replies to its own identifier, but another program's
	 * socket may have had it before ours: only our header makes a reply one of ours. */
	if (len < ICMP_HLEN + ICMP_PROBE_HLEN ||
	    load_be32(pl + ICMP_PROBE_MAGIC_OFF) != ICMP_PROBE_MAGIC)
		return -EBADMSG;
	out->number = load_be32(pl + ICMP_PROBE_NUMBER_OFF);
	out->test_id = load_be64(pl + ICMP_PROBE_TEST_OFF);
	return (int)len;
}

void icmp_stats_init(struct icmp_stats *s)
{
	*s = (struct icmp_stats){ .min_ns = UINT64_MAX };
}

void icmp_stats_add(struct icmp_stats *s, uint64_t rtt_ns)
{
	if (s->count)
		s->jitter_sum_ns += rtt_ns > s->last_ns ? (double)(rtt_ns - s->last_ns)
							: (double)(s->last_ns - rtt_ns);
	s->count++;
	s->last_ns = rtt_ns;
	if (rtt_ns < s->min_ns)
		s->min_ns = rtt_ns;
	if (rtt_ns > s->max_ns)
		s->max_ns = rtt_ns;
	s->sum_ns += (double)rtt_ns;
	s->sum_sq_ns += (double)rtt_ns * (double)rtt_ns;
}

void icmp_stats_summary(const struct icmp_stats *s, uint64_t sent, uint64_t received,
			struct icmp_summary *out)
{
	double n = (double)s->count, mean, var;

	*out = (struct icmp_summary){ 0 };
	if (received > sent)
		received = sent;
	out->loss_percent = sent ? 100.0 * (double)(sent - received) / (double)sent : 0;
	if (!s->count)
		return;
	mean = s->sum_ns / n;
	var = s->sum_sq_ns / n - mean * mean;
	out->min_ms = (double)s->min_ns / 1e6;
	out->max_ms = (double)s->max_ns / 1e6;
	out->avg_ms = mean / 1e6;
	/* Rounding can make the difference of two large, nearly equal sums a hair negative. */
	out->mdev_ms = var > 0 ? sqrt(var) / 1e6 : 0;
	out->jitter_ms = s->count > 1 ? s->jitter_sum_ns / (n - 1) / 1e6 : 0;
}
