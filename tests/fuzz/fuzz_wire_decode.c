/*
 * libFuzzer harness for the wire audit's decoder: the first input byte picks the link type
 * and which checks are asked for (the outer DSCP and TTL among them), the rest is a frame. Whatever it is, the decoder must keep
 * inside it, also through the datagrams of a GSO super-frame, and the audit must account it
 * without crashing.
 */
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "wire_audit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const int links[8] = {
	WIRE_LINK_ETHER, WIRE_LINK_RAW,	 WIRE_LINK_LINUX_SLL, WIRE_LINK_LINUX_SLL2,
	WIRE_LINK_NULL,	 WIRE_LINK_IPV4, WIRE_LINK_IPV6,      WIRE_LINK_ETHER,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct wire_audit audit;
	static int ready;
	struct wire_expect e;
	struct wire_frame f;
	size_t caplen;

	if (size < 1)
		return 0;
	wire_expect_init(&e);
	e.key = data[0] & 0x08 ? WIRE_WANT_YES : WIRE_WANT_NO;
	e.key_value = 7;
	e.seq = data[0] & 0x10 ? WIRE_WANT_YES : WIRE_WANT_ANY;
	e.csum = data[0] & 0x20 ? WIRE_WANT_YES : WIRE_WANT_NO;
	e.mtu = data[0] & 0x40 ? 1400 : 0;
	/* The outer DSCP and TTL inherited with a key asked for, fixed without (ECN always). */
	e.dscp = e.ttl = data[0] & 0x08 ? WIRE_FIELD_INHERIT : WIRE_FIELD_FIXED;
	e.dscp_value = 46;
	e.ttl_value = 64;
	/* The top bit: the capture kept only half of the frame. */
	caplen = data[0] & 0x80 ? (size - 1) / 2 : size - 1;
	if (wire_decode(&e, links[data[0] & 7], data + 1, caplen, size - 1, &f) < 0)
		abort();
	if (f.violations >> WIRE_V_MAX || f.outer_len > size - 1 || f.frame_len > size - 1)
		abort();
	if (!f.next && f.frame_len != size - 1)
		abort();
	/* A GSO super-frame: each datagram must lie inside the frame, each one further on. */
	for (size_t at = 0;;) {
		if (f.has_inner && (f.inner_len > f.outer_len || !f.has_gre))
			abort();
		if (!f.next)
			break;
		if (f.encap != WIRE_ENCAP_GRE_UDP || f.next <= at || f.next_len == 0 ||
		    f.next + f.next_len > size - 1)
			abort();
		at = f.next;
		if (wire_decode_next(&e, data + 1, caplen, size - 1, &f, &f) < 0)
			abort();
		if (f.violations >> WIRE_V_MAX || f.frame_len != f.link_hlen + f.outer_len)
			abort();
	}
	if (!ready) {
		if (wire_audit_init(&audit, &e, WIRE_LINK_ETHER) < 0)
			abort();
		ready = 1;
	}
	audit.link = links[data[0] & 7];
	wire_audit_frame(&audit, data + 1, caplen, size - 1, 0);
	return 0;
}
