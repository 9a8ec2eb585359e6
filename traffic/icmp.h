/*
 * ICMP echo (RFC 792) and ICMPv6 echo (RFC 4443, 4.1 and 4.2) as the client's ping probes
 * send them through an unprivileged "ping" socket, and the round-trip statistics ping(8)
 * reports: average, minimum, maximum, mdev and loss, plus the mean difference of consecutive
 * round trips (jitter). Pure: no I/O, no allocation, no logging.
 */
#ifndef TUNBED_TR_ICMP_H
#define TUNBED_TR_ICMP_H

#include <stddef.h>
#include <stdint.h>

/*
 * The message as a ping socket takes and gives it: the ICMP header (type, code, checksum,
 * identifier, sequence number; the kernel fills checksum and identifier), then our payload,
 * which opens with a header of its own: magic "TBIC", the probe's number, the test id.
 */
enum {
	ICMP_ECHO_REQUEST = 8,	  /* RFC 792 */
	ICMP_ECHO_REPLY = 0,	  /* RFC 792 */
	ICMP6_ECHO_REQUEST = 128, /* RFC 4443, 4.1 */
	ICMP6_ECHO_REPLY = 129,	  /* RFC 4443, 4.2 */
	ICMP_ECHO_ID_OFF = 4,
	ICMP_ECHO_SEQ_OFF = 6,
	ICMP_PROBE_MAGIC = 0x54424943, /* "TBIC" */
	ICMP_PROBE_MAGIC_OFF = 0,      /* from the start of the payload */
	ICMP_PROBE_NUMBER_OFF = 4,
	ICMP_PROBE_TEST_OFF = 8,
	ICMP_PROBE_HLEN = 16,	      /* our header in the payload */
	ICMP_PAYLOAD_DEFAULT = 56,    /* ping(8)'s default -s */
	ICMP_PAYLOAD_MAX = 65507 - 8, /* the largest datagram over IPv4, less the ICMP header */
};

/* One probe: its number (the low 16 bits go in the ICMP sequence field) and the test's id. */
struct icmp_probe {
	uint32_t number;
	uint64_t test_id;
};

/*
 * Writes an echo request of family (AF_INET or AF_INET6) carrying probe into buf: the ICMP
 * header (checksum and identifier 0: the ping socket sets them) and payload bytes of payload,
 * our header first and a fixed fill after it. Returns the length (ICMP_HLEN + payload),
 * -EINVAL for a payload shorter than ICMP_PROBE_HLEN or longer than ICMP_PAYLOAD_MAX or an
 * unknown family, or -ENOSPC when room is too small.
 */
int icmp_echo_build(uint8_t *buf, size_t room, int family, const struct icmp_probe *probe,
		    size_t payload);

/*
 * Reads what a ping socket of family received (the ICMP message, no IP header) into *out.
 * Returns the message's length; -EINVAL when it is shorter than an ICMP header; -ENOMSG when
 * it is not an echo reply (another type, or a code other than 0); -EBADMSG when its payload
 * does not open with our header (too short, or another magic): a reply to someone else's
 * echo. The test id is returned, not judged: the caller compares it with its own.
 */
int icmp_echo_parse(const uint8_t *p, size_t len, int family, struct icmp_probe *out);

/* Round trips, as ping(8) sums them. */
struct icmp_stats {
	uint64_t count;
	uint64_t min_ns, max_ns;
	double sum_ns, sum_sq_ns; /* for the mean and mdev */
	uint64_t last_ns;	  /* the previous round trip, for the jitter */
	double jitter_sum_ns;	  /* sum of |rtt(i) - rtt(i-1)| over arrivals */
};

/* Round-trip figures in milliseconds, with loss in percent of the probes sent. */
struct icmp_summary {
	double min_ms, avg_ms, max_ms;
	double mdev_ms;	  /* sqrt(mean of squares - square of the mean), ping(8)'s */
	double jitter_ms; /* mean |difference| of consecutive round trips, in arrival order */
	double loss_percent;
};

void icmp_stats_init(struct icmp_stats *s);

/* Adds one round trip. */
void icmp_stats_add(struct icmp_stats *s, uint64_t rtt_ns);

/*
 * The figures of s, with loss from sent and received (unique replies, at most sent). With no
 * round trip every figure but the loss is 0; with nothing sent the loss is 0 too.
 */
void icmp_stats_summary(const struct icmp_stats *s, uint64_t sent, uint64_t received,
			struct icmp_summary *out);

#endif
