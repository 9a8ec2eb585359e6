/*
 * TCP MSS clamping: lowers the maximum segment size a SYN announces (RFC 9293 3.7.1) so that
 * segments fit the tunnel. Pure; changes the packet in place.
 */
#ifndef TUNBED_GW_MSS_H
#define TUNBED_GW_MSS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "inet.h"

/* The largest MSS that fits an MTU: MTU minus IP and TCP headers without options. */
unsigned mss_for_mtu(int family, unsigned mtu);

/*
 * If pkt (len bytes, IP header parsed into *ip) is a TCP SYN or SYN-ACK whose MSS option
 * exceeds max_mss, rewrites it to max_mss and fixes the TCP checksum incrementally (unless
 * csum_partial: the field holds the pseudo-header's sum, and whoever completes it sums the
 * new value). Packets that are not first fragments, or whose TCP header or options are
 * malformed, are left alone. Returns true if the packet changed.
 */
bool mss_clamp(uint8_t *pkt, size_t len, const struct ip_info *ip, unsigned max_mss,
	       bool csum_partial);

#endif
