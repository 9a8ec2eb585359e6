/*
 * The inner sources gregw accepts from its peer, what WireGuard calls allowed IPs for
 * receive: --allow-from, or by default what lies behind the peer (the --route prefixes) and
 * the tunnel subnets' other addresses (over IPv6 the link-local ones too: the tunnel is a
 * link); never our own: the TUN's addresses, and the prefixes of the namespace's interfaces
 * (the LANs this gateway serves), read once at start.
 */
#ifndef TUNBED_GW_ALLOW_H
#define TUNBED_GW_ALLOW_H

#include "config.h"
#include "encap.h"

/*
 * Fills e's inner sources (encap_sources) and tunnel subnets from c and the namespace's
 * addresses. Setup only, main thread, before the TUN device exists. Returns 0 or -errno,
 * having said why on stderr.
 */
int allow_plan(struct encap_cfg *e, const struct config *c);

#endif
