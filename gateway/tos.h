/*
 * The IP header fields a tunnel carries across (docs/gregw.md, "DSCP, ECN and TTL across the
 * tunnel"): ECN by RFC 6040's normal mode, which RFC 9601 says holds for GRE and GRE-in-UDP
 * too (a shim between the two IP headers); the DSCP by RFC 2983, copied (--tos inherit) or set
 * (--tos N); the TTL as iproute2's `ip tunnel ttl` takes it; and CoDel's choice between a CE
 * mark and a drop (RFC 3168, 5; RFC 8311). Pure: no I/O, no allocation; any thread.
 */
#ifndef TUNBED_GW_TOS_H
#define TUNBED_GW_TOS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What --tos and --ttl ask for (config.h keeps it for the packet path). */
struct tos_cfg {
	bool dscp_inherit; /* --tos inherit: the outer DSCP copies the inner one */
	uint8_t dscp;	   /* --tos N: the outer DSCP, 0 to 63 */
	bool ttl_inherit;  /* --ttl inherit (or 0): the outer TTL copies the inner TTL */
	uint8_t ttl;	   /* --ttl N: 1 to 255 */
};

/* The defaults: --tos inherit, and --ttl TUNNEL_TTL (64), what gregw has always sent. */
void tos_cfg_init(struct tos_cfg *c);

/* The fields of an IP header that cross the tunnel. */
struct tos_fields {
	uint8_t ds;  /* the DS field: DSCP and ECN (common/inet.h) */
	uint8_t ttl; /* TTL, or hop limit */
};

/*
 * Reads the DS field and TTL of the IPv4 or IPv6 header at p (len bytes). Returns 0, or
 * -EINVAL when p holds neither an IPv4 nor an IPv6 header as long as its fixed part.
 */
int tos_read(const uint8_t *p, size_t len, struct tos_fields *out);

/* RFC 6040, 4.1, normal mode: the outer ECN field copies the inner one, CE included. */
unsigned tos_ecn_encap(unsigned inner_ecn);

/*
 * The outer header's fields for an inner packet's: the DSCP copied or fixed as c says, the ECN
 * field by tos_ecn_encap whatever the DSCP (a fixed --tos never fixes ECN), the TTL copied or
 * fixed.
 */
struct tos_fields tos_encap(const struct tos_cfg *c, struct tos_fields inner);

/*
 * Writes f into the IPv4 or IPv6 header at p (len bytes). An IPv4 header checksum is updated
 * as the fields change (RFC 1624, eqn. 3), so it is right afterwards if it was before, and a
 * checksum computed later over the whole header is unaffected. Returns 0, or -EINVAL as
 * tos_read.
 */
int tos_write(uint8_t *p, size_t len, struct tos_fields f);

/* What decapsulation does with a packet, by RFC 6040, 4.2, Figure 4. */
enum tos_verdict {
	TOS_FORWARD,	   /* on, with the ECN field the table gives */
	TOS_FORWARD_ALARM, /* the same, but no standard makes this pair ("(!!!)"): count it */
	TOS_DROP,	   /* CE outside, Not-ECT inside: drop and count ("<drop>(!!!)") */
};

struct tos_decap {
	enum tos_verdict verdict;
	uint8_t ecn; /* the inner packet's ECN field as it goes on; Not-ECT with TOS_DROP */
};

/*
 * RFC 6040, 4.2: what becomes of an inner packet whose ECN field is inner_ecn, arriving in an
 * outer header whose ECN field is outer_ecn. The table, rows the inner field, columns the
 * outer one:
 *
 *               Not-ECT   ECT(0)          ECT(1)          CE
 *     Not-ECT   Not-ECT   Not-ECT alarm   Not-ECT alarm   drop
 *     ECT(0)    ECT(0)    ECT(0)          ECT(1)          CE
 *     ECT(1)    ECT(1)    ECT(1)          ECT(1)          CE
 *     CE        CE        CE              CE alarm        CE
 *
 * ECT(1) inside ECT(0) is the RFC's "(!)": unused today, forwarded without an alarm.
 */
struct tos_decap tos_ecn_decap(unsigned outer_ecn, unsigned inner_ecn);

/*
 * tos_ecn_decap on the inner packet at p (len bytes) under an outer DS field outer_ds: the
 * inner ECN field set as the table says, the IPv4 header checksum kept right (RFC 1624); the
 * inner DSCP and TTL stay as they came (RFC 2983's default: the outer ones are dropped with
 * the outer header). Nothing changes with TOS_DROP. Returns the verdict, or -EINVAL as
 * tos_read.
 */
int tos_decap_apply(uint8_t outer_ds, uint8_t *p, size_t len);

/*
 * Sets the ECN field of the IPv4 or IPv6 header at p (len bytes) to ecn, keeping an IPv4
 * header checksum right (RFC 1624). Returns 0, or -EINVAL as tos_read.
 */
int tos_set_ecn(uint8_t *p, size_t len, unsigned ecn);

/* How an AQM tells a standing queue to a packet of ECN field ecn. */
enum tos_aqm {
	TOS_AQM_MARK, /* ECT(0), ECT(1) or CE already: set CE (RFC 3168, 5; RFC 8311, 4.1) */
	TOS_AQM_DROP, /* Not-ECT: its transport understands only a loss */
};

enum tos_aqm tos_aqm_signal(unsigned ecn);

#endif
