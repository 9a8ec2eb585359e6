/*
 * Unit tests for tunbed-traffic's wire records (traffic/proto.c): every record round-trips,
 * and every parser refuses short input, foreign magic, other versions and out-of-range
 * fields with the documented error.
 */
#include <errno.h>

#include "check.h"
#include "proto.h"

static void test_hello(void)
{
	struct proto_hello h = { .kind = PROTO_KIND_DATA,
				 .pattern = PROTO_DUPLEX,
				 .flags = PROTO_F_VERIFY,
				 .test_id = 0x0123456789abcdefull,
				 .session = 9999,
				 .bytes = 1ull << 40,
				 .duration_ms = 10000,
				 .rate_bps = 2500000000ull,
				 .buffer = 131072,
				 .rr_size = 64 };
	struct proto_hello out;
	uint8_t b[PROTO_HELLO_LEN];

	CHECK_INT(proto_hello_build(b, sizeof(b) - 1, &h), -ENOSPC);
	CHECK_INT(proto_hello_build(b, sizeof(b), &h), PROTO_HELLO_LEN);
	CHECK_INT(proto_hello_parse(b, sizeof(b), &out), PROTO_HELLO_LEN);
	CHECK_U64(out.test_id, h.test_id);
	CHECK_INT(out.session, 9999);
	CHECK_U64(out.bytes, 1ull << 40);
	CHECK_INT(out.duration_ms, 10000);
	CHECK_U64(out.rate_bps, 2500000000ull);
	CHECK_INT(out.buffer, 131072);
	CHECK_INT(out.pattern, PROTO_DUPLEX);
	CHECK_INT(out.flags, PROTO_F_VERIFY);
	/* Partial hellos wait for more; a wrong magic is refused from its first 4 bytes. */
	CHECK_INT(proto_hello_parse(b, 3, &out), -ENODATA);
	CHECK_INT(proto_hello_parse(b, PROTO_HELLO_LEN - 1, &out), -ENODATA);
	b[0] ^= 1;
	CHECK_INT(proto_hello_parse(b, 4, &out), -EPROTO);
	b[0] ^= 1;
	b[5] = 2; /* version 2 */
	CHECK_INT(proto_hello_parse(b, sizeof(b), &out), -EPROTO);
	b[5] = 1;

	static const struct {
		const char *name;
		size_t at;
		uint8_t val;
	} bad[] = {
		{ "kind 0", 6, 0 },	     { "kind 4", 6, 4 },
		{ "pattern 0", 20, 0 },	     { "pattern 4", 20, 4 },
		{ "unknown flag", 7, 0x80 }, { "session 10000 (hi)", 18, 0x27 },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint8_t c[PROTO_HELLO_LEN];

		memcpy(c, b, sizeof(c));
		c[bad[i].at] = bad[i].val;
		if (bad[i].at == 18)
			c[19] = 0x10; /* 0x2710 = 10000 */
		CHECK_ROW(proto_hello_parse(c, sizeof(c), &out) == -EINVAL, bad[i].name);
	}
	h.buffer = 0;
	proto_hello_build(b, sizeof(b), &h);
	CHECK_INT(proto_hello_parse(b, sizeof(b), &out), -EINVAL);
	h.kind = PROTO_KIND_RR;
	h.rr_size = 15;
	proto_hello_build(b, sizeof(b), &h);
	CHECK_INT(proto_hello_parse(b, sizeof(b), &out), -EINVAL);
	h.rr_size = 16;
	proto_hello_build(b, sizeof(b), &h);
	CHECK_INT(proto_hello_parse(b, sizeof(b), &out), PROTO_HELLO_LEN);
}

static void test_udp(void)
{
	struct proto_udp u = {
		.test_id = 42, .session = 7, .seq = 1ull << 33, .send_ns = 123456789
	};
	struct proto_udp out;
	uint8_t b[PROTO_UDP_HLEN];

	CHECK_INT(proto_udp_build(b, sizeof(b), &u), PROTO_UDP_HLEN);
	CHECK_INT(proto_udp_parse(b, sizeof(b), &out), PROTO_UDP_HLEN);
	CHECK_U64(out.seq, 1ull << 33);
	CHECK_U64(out.send_ns, 123456789);
	CHECK_INT(out.session, 7);
	CHECK(!out.echo && !out.is_short);
	b[0] ^= 1;
	CHECK_INT(proto_udp_parse(b, sizeof(b), &out), -EPROTO);
	b[0] ^= 1;
	/* Asking for a reply is its own magic. */
	u.echo = true;
	CHECK_INT(proto_udp_build(b, sizeof(b), &u), PROTO_UDP_HLEN);
	CHECK_INT(proto_udp_parse(b, sizeof(b), &out), PROTO_UDP_HLEN);
	CHECK(out.echo);
}

/* Below 32 bytes the short form: a 64-byte Ethernet frame of IPv4 holds 18 bytes of UDP. */
static void test_udp_short(void)
{
	struct proto_udp u = { .test_id = 0x0123456789abcdefull,
			       .session = 9999,
			       .seq = (1ull << 47) + 5,
			       .send_ns = 1,
			       .echo = true };
	struct proto_udp out;
	uint8_t b[PROTO_UDP_HLEN];

	CHECK_INT(proto_udp_build(b, PROTO_UDP_SHORT_HLEN - 1, &u), -ENOSPC);
	CHECK_INT(proto_udp_build(b, PROTO_UDP_SHORT_HLEN, &u), PROTO_UDP_SHORT_HLEN);
	CHECK_INT(proto_udp_parse(b, PROTO_UDP_SHORT_HLEN, &out), PROTO_UDP_SHORT_HLEN);
	CHECK_U64(out.test_id, u.test_id);
	CHECK_INT(out.session, 9999);
	CHECK_U64(out.seq, (1ull << 47) + 5);
	CHECK_U64(out.send_ns, 0);
	CHECK(out.echo && out.is_short);
	/* Any length from 18 to 31 is the short form, read the same. */
	CHECK_INT(proto_udp_build(b, PROTO_UDP_HLEN - 1, &u), PROTO_UDP_SHORT_HLEN);
	CHECK_INT(proto_udp_parse(b, PROTO_UDP_HLEN - 1, &out), PROTO_UDP_SHORT_HLEN);
	CHECK_INT(proto_udp_parse(b, PROTO_UDP_SHORT_HLEN - 1, &out), -ENODATA);
	u.echo = false;
	proto_udp_build(b, PROTO_UDP_SHORT_HLEN, &u);
	CHECK_INT(proto_udp_parse(b, PROTO_UDP_SHORT_HLEN, &out), PROTO_UDP_SHORT_HLEN);
	CHECK(!out.echo);
	/* The long form's magic in a short datagram, a session out of range: not ours. */
	u.session = 7;
	proto_udp_build(b, PROTO_UDP_HLEN, &u);
	CHECK_INT(proto_udp_parse(b, PROTO_UDP_HLEN - 1, &out), -EPROTO);
	u.session = 10000;
	proto_udp_build(b, PROTO_UDP_SHORT_HLEN, &u);
	CHECK_INT(proto_udp_parse(b, PROTO_UDP_SHORT_HLEN, &out), -EPROTO);
}

static void test_udp_reply(void)
{
	struct proto_udp_reply r = {
		.test_id = 77, .session = 3, .seq = 1ull << 40, .dwell_ns = 5
	};
	struct proto_udp_reply out;
	uint8_t b[PROTO_UDP_REPLY_LEN];

	CHECK_INT(proto_udp_reply_build(b, sizeof(b) - 1, &r), -ENOSPC);
	CHECK_INT(proto_udp_reply_build(b, sizeof(b), &r), PROTO_UDP_REPLY_LEN);
	CHECK_INT(proto_udp_reply_parse(b, sizeof(b), &out), PROTO_UDP_REPLY_LEN);
	CHECK_U64(out.test_id, 77);
	CHECK_INT(out.session, 3);
	CHECK_U64(out.seq, 1ull << 40);
	CHECK_U64(out.dwell_ns, 5);
	CHECK_INT(proto_udp_reply_parse(b, sizeof(b) - 1, &out), -ENODATA);
	b[3] ^= 1;
	CHECK_INT(proto_udp_reply_parse(b, sizeof(b), &out), -EPROTO);
	/* A datagram is not a reply. */
	proto_udp_build(b, sizeof(b), &(struct proto_udp){ .session = 1 });
	CHECK_INT(proto_udp_reply_parse(b, sizeof(b), &out), -EPROTO);
}

static void test_control(void)
{
	struct proto_ctl_req r = { .type = PROTO_CTL_RESULTS, .test_id = 77 }, ro;
	struct proto_ctl_ans a = { .type = PROTO_CTL_UDP_RESULTS, .count = 3 }, ao;
	struct proto_result res = { .session = 5,
				    .done = true,
				    .failed = true,
				    .rx_bytes = 10,
				    .tx_bytes = 20,
				    .mismatches = 1,
				    .first_bad = 99 },
			    reso;
	struct proto_udp_result ur = { .session = 9,
				       .received = 100,
				       .duplicates = 1,
				       .reordered = 2,
				       .too_old = 3,
				       .lowest = 0,
				       .highest = 104,
				       .jitter_ns = 5000 },
				uro;
	struct proto_cpu cpu = { .cpu_ns = 1ull << 35, .threads = 2 }, cpuo;
	uint8_t b[PROTO_UDP_RESULT_LEN];

	CHECK_INT(proto_ctl_req_build(b, sizeof(b), &r), PROTO_CTL_REQ_LEN);
	CHECK_INT(proto_ctl_req_parse(b, PROTO_CTL_REQ_LEN, &ro), PROTO_CTL_REQ_LEN);
	CHECK_U64(ro.test_id, 77);
	b[4] = 9;
	CHECK_INT(proto_ctl_req_parse(b, PROTO_CTL_REQ_LEN, &ro), -EPROTO);
	CHECK_INT(proto_ctl_ans_build(b, sizeof(b), &a), PROTO_CTL_ANS_HLEN);
	CHECK_INT(proto_ctl_ans_parse(b, PROTO_CTL_ANS_HLEN, &ao), PROTO_CTL_ANS_HLEN);
	CHECK_INT(ao.count, 3);
	CHECK_INT(proto_ctl_ans_parse(b, 8, &ao), -ENODATA);
	b[8] = 0xff; /* count 0xff000003: far above the session limit */
	CHECK_INT(proto_ctl_ans_parse(b, PROTO_CTL_ANS_HLEN, &ao), -EINVAL);
	CHECK_INT(proto_ctl_record_len(PROTO_CTL_CPU), PROTO_CPU_LEN);
	CHECK_INT(proto_ctl_record_len(0), 0);
	CHECK_INT(proto_result_build(b, sizeof(b), &res), PROTO_RESULT_LEN);
	CHECK_INT(proto_result_parse(b, PROTO_RESULT_LEN, &reso), PROTO_RESULT_LEN);
	CHECK(reso.done && reso.failed && reso.rx_bytes == 10 && reso.tx_bytes == 20 &&
	      reso.mismatches == 1 && reso.first_bad == 99 && reso.session == 5);
	CHECK_INT(proto_result_parse(b, PROTO_RESULT_LEN - 1, &reso), -ENODATA);
	CHECK_INT(proto_udp_result_build(b, sizeof(b), &ur), PROTO_UDP_RESULT_LEN);
	CHECK_INT(proto_udp_result_parse(b, sizeof(b), &uro), PROTO_UDP_RESULT_LEN);
	CHECK(uro.received == 100 && uro.highest == 104 && uro.jitter_ns == 5000 &&
	      uro.too_old == 3 && uro.session == 9);
	b[0] = 0;
	CHECK_INT(proto_udp_result_parse(b, sizeof(b), &uro), -EPROTO);
	CHECK_INT(proto_cpu_build(b, sizeof(b), &cpu), PROTO_CPU_LEN);
	CHECK_INT(proto_cpu_parse(b, PROTO_CPU_LEN, &cpuo), PROTO_CPU_LEN);
	CHECK_U64(cpuo.cpu_ns, 1ull << 35);
	CHECK_INT(cpuo.threads, 2);
}

int main(void)
{
	test_hello();
	test_udp();
	test_udp_short();
	test_udp_reply();
	test_control();
	return check_done("test_proto");
}
