/*
 * libFuzzer harness for tunbed-traffic's parsers of what arrives from the network: the
 * hello, the UDP header (both forms), the server's reply to a sample, control requests,
 * answers and their records. Whatever they accept
 * must build back to the same bytes' fields; nothing may read past the input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t again[PROTO_UDP_RESULT_LEN];
	struct proto_hello h, h2;
	struct proto_udp u;
	struct proto_udp_reply rep;
	int hl;
	struct proto_ctl_req r;
	struct proto_ctl_ans a;
	struct proto_result res;
	struct proto_udp_result ur;
	struct proto_cpu cpu;

	if (proto_hello_parse(data, size, &h) == PROTO_HELLO_LEN) {
		uint8_t b[PROTO_HELLO_LEN];

		proto_hello_build(b, sizeof(b), &h);
		if (proto_hello_parse(b, sizeof(b), &h2) != PROTO_HELLO_LEN ||
		    h2.test_id != h.test_id || h2.session != h.session || h2.bytes != h.bytes)
			abort();
	}
	hl = proto_udp_parse(data, size, &u);
	if (hl > 0 &&
	    (proto_udp_build(again, (size_t)hl, &u) != hl ||
	     (hl == PROTO_UDP_SHORT_HLEN) != u.is_short || memcmp(again, data, (size_t)hl) != 0))
		abort();
	if (proto_udp_reply_parse(data, size, &rep) == PROTO_UDP_REPLY_LEN &&
	    (proto_udp_reply_build(again, sizeof(again), &rep) != PROTO_UDP_REPLY_LEN ||
	     memcmp(again, data, PROTO_UDP_REPLY_LEN) != 0))
		abort();
	proto_ctl_req_parse(data, size, &r);
	if (proto_ctl_ans_parse(data, size, &a) == PROTO_CTL_ANS_HLEN) {
		size_t len = proto_ctl_record_len(a.type), off = PROTO_CTL_ANS_HLEN;

		if (!len)
			abort();
		for (uint32_t i = 0; i < a.count && off + len <= size; i++, off += len) {
			if (a.type == PROTO_CTL_RESULTS)
				proto_result_parse(data + off, size - off, &res);
			else if (a.type == PROTO_CTL_UDP_RESULTS)
				proto_udp_result_parse(data + off, size - off, &ur);
			else
				proto_cpu_parse(data + off, size - off, &cpu);
		}
	}
	return 0;
}
