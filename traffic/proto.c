/*
 * tunbed-traffic wire records (see proto.h). Every parser checks the length before reading
 * a field and refuses what another program could have sent by mistake (magic, version).
 */
#include "proto.h"

#include <errno.h>
#include <string.h>

#include "byteorder.h"

enum {
	MAGIC_HELLO = 0x54425452,     /* "TBTR" */
	MAGIC_UDP = 0x54425544,	      /* "TBUD" */
	MAGIC_UDP_ECHO = 0x54425545,  /* "TBUE": a datagram that asks for a reply */
	MAGIC_UDP_REPLY = 0x54425552, /* "TBUR" */
	MAGIC_SHORT = 0x7462,	      /* "tb": the short form */
	MAGIC_SHORT_ECHO = 0x7465,    /* "te" */
	MAGIC_CTL_REQ = 0x54424351,   /* "TBCQ" */
	MAGIC_CTL_ANS = 0x54424341,   /* "TBCA" */
	MAGIC_RESULT = 0x54425253,    /* "TBRS" */
};

int proto_hello_build(uint8_t *buf, size_t room, const struct proto_hello *h)
{
	if (room < PROTO_HELLO_LEN)
		return -ENOSPC;
	memset(buf, 0, PROTO_HELLO_LEN);
	store_be32(buf, MAGIC_HELLO);
	store_be16(buf + 4, PROTO_VERSION);
	buf[6] = h->kind;
	buf[7] = h->flags;
	store_be64(buf + 8, h->test_id);
	store_be32(buf + 16, h->session);
	buf[20] = h->pattern;
	store_be64(buf + 24, h->bytes);
	store_be32(buf + 32, h->duration_ms);
	store_be64(buf + 36, h->rate_bps);
	store_be32(buf + 44, h->buffer);
	store_be32(buf + 48, h->rr_size);
	store_be32(buf + 52, h->measure_ms);
	return PROTO_HELLO_LEN;
}

int proto_hello_parse(const uint8_t *buf, size_t len, struct proto_hello *h)
{
	if (len >= 4 && load_be32(buf) != MAGIC_HELLO)
		return -EPROTO;
	if (len < PROTO_HELLO_LEN)
		return -ENODATA;
	if (load_be16(buf + 4) != PROTO_VERSION)
		return -EPROTO;
	h->kind = buf[6];
	h->flags = buf[7];
	h->test_id = load_be64(buf + 8);
	h->session = load_be32(buf + 16);
	h->pattern = buf[20];
	h->bytes = load_be64(buf + 24);
	h->duration_ms = load_be32(buf + 32);
	h->rate_bps = load_be64(buf + 36);
	h->buffer = load_be32(buf + 44);
	h->rr_size = load_be32(buf + 48);
	h->measure_ms = load_be32(buf + 52);
	if (h->kind < PROTO_KIND_DATA || h->kind > PROTO_KIND_CONTROL ||
	    h->session >= PROTO_MAX_SESSIONS || (h->flags & ~PROTO_F_VERIFY))
		return -EINVAL;
	if (h->kind == PROTO_KIND_DATA && (h->pattern < PROTO_PUSH || h->pattern > PROTO_DUPLEX ||
					   h->buffer == 0 || h->buffer > TRAFFIC_BUFFER_MAX))
		return -EINVAL;
	if (h->kind == PROTO_KIND_RR && (h->rr_size < PROTO_RR_MIN || h->rr_size > PROTO_RR_MAX))
		return -EINVAL;
	return PROTO_HELLO_LEN;
}

int proto_udp_build(uint8_t *buf, size_t room, const struct proto_udp *u)
{
	if (room < PROTO_UDP_SHORT_HLEN)
		return -ENOSPC;
	if (room < PROTO_UDP_HLEN) {
		store_be16(buf, u->echo ? MAGIC_SHORT_ECHO : MAGIC_SHORT);
		store_be16(buf + 2, (uint16_t)u->session);
		store_be64(buf + 4, u->test_id);
		store_be16(buf + 12, (uint16_t)(u->seq >> 32));
		store_be32(buf + 14, (uint32_t)u->seq);
		return PROTO_UDP_SHORT_HLEN;
	}
	store_be32(buf, u->echo ? MAGIC_UDP_ECHO : MAGIC_UDP);
	store_be32(buf + 4, u->session);
	store_be64(buf + 8, u->test_id);
	store_be64(buf + 16, u->seq);
	store_be64(buf + 24, u->send_ns);
	return PROTO_UDP_HLEN;
}

static int parse_short(const uint8_t *buf, struct proto_udp *u)
{
	uint16_t magic = load_be16(buf);

	if (magic != MAGIC_SHORT && magic != MAGIC_SHORT_ECHO)
		return -EPROTO;
	u->echo = magic == MAGIC_SHORT_ECHO;
	u->is_short = true;
	u->session = load_be16(buf + 2);
	u->test_id = load_be64(buf + 4);
	u->seq = (uint64_t)load_be16(buf + 12) << 32 | load_be32(buf + 14);
	u->send_ns = 0;
	if (u->session >= PROTO_MAX_SESSIONS)
		return -EPROTO;
	return PROTO_UDP_SHORT_HLEN;
}

int proto_udp_parse(const uint8_t *buf, size_t len, struct proto_udp *u)
{
	uint32_t magic;

	if (len < PROTO_UDP_SHORT_HLEN)
		return -ENODATA;
	/* The length decides the form, as it did for the sender: a short datagram that claims
	 * the long form's magic is not one of ours. */
	if (len < PROTO_UDP_HLEN)
		return parse_short(buf, u);
	magic = load_be32(buf);
	if (magic != MAGIC_UDP && magic != MAGIC_UDP_ECHO)
		return -EPROTO;
	u->echo = magic == MAGIC_UDP_ECHO;
	u->is_short = false;
	u->session = load_be32(buf + 4);
	u->test_id = load_be64(buf + 8);
	u->seq = load_be64(buf + 16);
	u->send_ns = load_be64(buf + 24);
	if (u->session >= PROTO_MAX_SESSIONS)
		return -EPROTO;
	return PROTO_UDP_HLEN;
}

int proto_udp_reply_build(uint8_t *buf, size_t room, const struct proto_udp_reply *r)
{
	if (room < PROTO_UDP_REPLY_LEN)
		return -ENOSPC;
	store_be32(buf, MAGIC_UDP_REPLY);
	store_be32(buf + 4, r->session);
	store_be64(buf + 8, r->test_id);
	store_be64(buf + 16, r->seq);
	store_be64(buf + 24, r->dwell_ns);
	return PROTO_UDP_REPLY_LEN;
}

int proto_udp_reply_parse(const uint8_t *buf, size_t len, struct proto_udp_reply *r)
{
	if (len < PROTO_UDP_REPLY_LEN)
		return -ENODATA;
	if (load_be32(buf) != MAGIC_UDP_REPLY)
		return -EPROTO;
	r->session = load_be32(buf + 4);
	r->test_id = load_be64(buf + 8);
	r->seq = load_be64(buf + 16);
	r->dwell_ns = load_be64(buf + 24);
	if (r->session >= PROTO_MAX_SESSIONS)
		return -EPROTO;
	return PROTO_UDP_REPLY_LEN;
}

int proto_ctl_req_build(uint8_t *buf, size_t room, const struct proto_ctl_req *r)
{
	if (room < PROTO_CTL_REQ_LEN)
		return -ENOSPC;
	memset(buf, 0, PROTO_CTL_REQ_LEN);
	store_be32(buf, MAGIC_CTL_REQ);
	buf[4] = r->type;
	store_be64(buf + 8, r->test_id);
	return PROTO_CTL_REQ_LEN;
}

int proto_ctl_req_parse(const uint8_t *buf, size_t len, struct proto_ctl_req *r)
{
	if (len >= 4 && load_be32(buf) != MAGIC_CTL_REQ)
		return -EPROTO;
	if (len < PROTO_CTL_REQ_LEN)
		return -ENODATA;
	r->type = buf[4];
	r->test_id = load_be64(buf + 8);
	if (!proto_ctl_record_len(r->type))
		return -EPROTO;
	return PROTO_CTL_REQ_LEN;
}

size_t proto_ctl_record_len(uint8_t type)
{
	switch (type) {
	case PROTO_CTL_CPU:
		return PROTO_CPU_LEN;
	case PROTO_CTL_RESULTS:
		return PROTO_RESULT_LEN;
	case PROTO_CTL_UDP_RESULTS:
		return PROTO_UDP_RESULT_LEN;
	}
	return 0;
}

int proto_ctl_ans_build(uint8_t *buf, size_t room, const struct proto_ctl_ans *a)
{
	if (room < PROTO_CTL_ANS_HLEN)
		return -ENOSPC;
	memset(buf, 0, PROTO_CTL_ANS_HLEN);
	store_be32(buf, MAGIC_CTL_ANS);
	buf[4] = a->type;
	store_be32(buf + 8, a->count);
	return PROTO_CTL_ANS_HLEN;
}

int proto_ctl_ans_parse(const uint8_t *buf, size_t len, struct proto_ctl_ans *a)
{
	if (len >= 4 && load_be32(buf) != MAGIC_CTL_ANS)
		return -EPROTO;
	if (len < PROTO_CTL_ANS_HLEN)
		return -ENODATA;
	a->type = buf[4];
	a->count = load_be32(buf + 8);
	if (!proto_ctl_record_len(a->type))
		return -EPROTO;
	if (a->count > PROTO_MAX_SESSIONS)
		return -EINVAL;
	return PROTO_CTL_ANS_HLEN;
}

int proto_cpu_build(uint8_t *buf, size_t room, const struct proto_cpu *c)
{
	if (room < PROTO_CPU_LEN)
		return -ENOSPC;
	store_be64(buf, c->cpu_ns);
	store_be32(buf + 8, c->threads);
	store_be32(buf + 12, 0);
	return PROTO_CPU_LEN;
}

int proto_cpu_parse(const uint8_t *buf, size_t len, struct proto_cpu *c)
{
	if (len < PROTO_CPU_LEN)
		return -ENODATA;
	c->cpu_ns = load_be64(buf);
	c->threads = load_be32(buf + 8);
	return PROTO_CPU_LEN;
}

int proto_result_build(uint8_t *buf, size_t room, const struct proto_result *r)
{
	if (room < PROTO_RESULT_LEN)
		return -ENOSPC;
	store_be32(buf, MAGIC_RESULT);
	store_be32(buf + 4, r->session);
	store_be32(buf + 8, (r->done ? 1u : 0) | (r->failed ? 2u : 0));
	store_be32(buf + 12, 0);
	store_be64(buf + 16, r->rx_bytes);
	store_be64(buf + 24, r->tx_bytes);
	store_be64(buf + 32, r->mismatches);
	store_be64(buf + 40, r->first_bad);
	store_be64(buf + 48, r->rx_window);
	return PROTO_RESULT_LEN;
}

int proto_result_parse(const uint8_t *buf, size_t len, struct proto_result *r)
{
	uint32_t flags;

	if (len < PROTO_RESULT_LEN)
		return -ENODATA;
	if (load_be32(buf) != MAGIC_RESULT)
		return -EPROTO;
	r->session = load_be32(buf + 4);
	flags = load_be32(buf + 8);
	r->done = flags & 1;
	r->failed = flags & 2;
	r->rx_bytes = load_be64(buf + 16);
	r->tx_bytes = load_be64(buf + 24);
	r->mismatches = load_be64(buf + 32);
	r->first_bad = load_be64(buf + 40);
	r->rx_window = load_be64(buf + 48);
	if (r->session >= PROTO_MAX_SESSIONS)
		return -EPROTO;
	return PROTO_RESULT_LEN;
}

int proto_udp_result_build(uint8_t *buf, size_t room, const struct proto_udp_result *r)
{
	if (room < PROTO_UDP_RESULT_LEN)
		return -ENOSPC;
	store_be32(buf, MAGIC_RESULT);
	store_be32(buf + 4, r->session);
	store_be64(buf + 8, r->received);
	store_be64(buf + 16, r->duplicates);
	store_be64(buf + 24, r->reordered);
	store_be64(buf + 32, r->too_old);
	store_be64(buf + 40, r->lowest);
	store_be64(buf + 48, r->highest);
	store_be64(buf + 56, r->jitter_ns);
	return PROTO_UDP_RESULT_LEN;
}

int proto_udp_result_parse(const uint8_t *buf, size_t len, struct proto_udp_result *r)
{
	if (len < PROTO_UDP_RESULT_LEN)
		return -ENODATA;
	if (load_be32(buf) != MAGIC_RESULT)
		return -EPROTO;
	r->session = load_be32(buf + 4);
	r->received = load_be64(buf + 8);
	r->duplicates = load_be64(buf + 16);
	r->reordered = load_be64(buf + 24);
	r->too_old = load_be64(buf + 32);
	r->lowest = load_be64(buf + 40);
	r->highest = load_be64(buf + 48);
	r->jitter_ns = load_be64(buf + 56);
	if (r->session >= PROTO_MAX_SESSIONS)
		return -EPROTO;
	return PROTO_UDP_RESULT_LEN;
}
