/*
 * Userspace segmentation of the superpackets a TUN device with IFF_VNET_HDR hands over (see
 * Documentation/networking/tuntap.rst and include/uapi/linux/virtio_net.h): a TCP packet of up
 * to 64 KB is cut into MSS-sized segments as the kernel's tcp_gso_segment would, and a UDP one
 * (USO) into datagrams as __udp_gso_segment would, their checksums completed or left
 * partial. Pure: no I/O, no allocation; the superpacket is only read.
 */
#ifndef TUNBED_GW_GSO_H
#define TUNBED_GW_GSO_H

#include <linux/virtio_net.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "drop.h"
#include "inet.h"
#include "gw_limits.h"

#ifndef VIRTIO_NET_HDR_GSO_UDP_L4
#define VIRTIO_NET_HDR_GSO_UDP_L4 5 /* Linux 6.2: UDP segmentation (USO) */
#endif

/* A superpacket read from TUN, as gso_parse understood it. */
struct gso_pkt {
	const uint8_t *pkt;
	size_t len;
	int family;	  /* inner: AF_INET or AF_INET6 */
	uint8_t l4;	  /* IPPROTO_TCP or IPPROTO_UDP */
	bool ecn;	  /* VIRTIO_NET_HDR_GSO_ECN: CWR only on the first segment */
	unsigned l4_off;  /* transport header (the header's csum_start) */
	unsigned hdr_len; /* every header: l4_off + TCP header or 8 */
	unsigned mss;	  /* payload bytes per segment (gso_size); the last may be shorter */
	unsigned nseg;
	struct l4_csum csum; /* a packet not to segment: its checksum left partial (gso_parse) */
};

/*
 * Reads the virtio header h of a packet read from TUN. A packet that needs no segmenting
 * returns DROP_NONE with nseg 0, and g->csum saying where the header says its checksum was
 * left partial (start 0: complete), for the caller to complete (inet_csum_finish) or leave
 * to the device. A superpacket returns DROP_NONE with *g filled. DROP_TX_BAD_INNER: a header that
 * does not agree with the packet (unknown GSO type, offsets out of range, a family or
 * protocol other than the type names); DROP_TX_TOO_BIG: segments larger than mtu.
 */
enum drop_reason gso_parse(const struct virtio_net_hdr *h, const uint8_t *pkt, size_t len,
			   unsigned mtu, struct gso_pkt *g);

/*
 * Writes the headers of segment i < g->nseg into hdr (g->hdr_len bytes): IP total or payload
 * length, IPv4 identification + i and header checksum, TCP sequence + i * mss with FIN and
 * PSH on the last segment only (CWR on the first only, with ECN), UDP length; the transport
 * checksum covers the segment's payload, which is g->pkt + g->hdr_len + i * g->mss; with
 * partial it is left to the device, its field holding the pseudo-header's sum (gso_csum
 * says where). Returns the payload length.
 */
size_t gso_segment(const struct gso_pkt *g, unsigned i, uint8_t *hdr, bool partial);

/* Where a segment's transport checksum lies, for gso_segment with partial. */
static inline struct l4_csum gso_csum(const struct gso_pkt *g)
{
	return (struct l4_csum){ (uint16_t)g->l4_off,
				 g->l4 == IPPROTO_TCP ? TCP_CSUM_OFF : UDP_CSUM_OFF };
}

#endif
