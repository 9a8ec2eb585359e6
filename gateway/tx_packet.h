/*
 * Plain GRE's send transports (tx_packet_ops, tx_ip_ops; tx.h). On the packet socket
 * (--wire-tx packet, the default): whole Ethernet frames to the next hop that nexthop.h
 * follows, inner checksums left to the device where they may be; without a next hop, and
 * for one message a second that keeps the kernel's neighbour entry in use, on the IP path. On
 * the IP path alone (--wire-tx ip, or a kernel without packet sockets): a raw IPPROTO_GRE
 * socket, send-only, the kernel writing the outer IPv4 or IPv6 header.
 */
#ifndef TUNBED_GW_TX_PACKET_H
#define TUNBED_GW_TX_PACKET_H

#include <linux/if_packet.h>
#include <stdint.h>
#include <sys/socket.h>

#include "gw_limits.h"

#include "encap.h"
#include "nexthop.h"

/* A worker's sockets. */
struct tx_packet {
	int raw_fd;		      /* the IP path */
	unsigned ip_hlen;	      /* ... where the kernel writes the outer IP header */
	struct sockaddr_storage peer; /* the first peer's (--remote, the next hop's) */
	socklen_t peer_len;
	uint16_t ent_of[TX_MSGS]; /* the entry each message sends */
	int pkt_fd;		  /* tx_packet_ops: the packet socket */
	struct nexthop_hop hop;	  /* ... the next hop as last read (sh->nh) */
	uint32_t hop_seen;	  /* ... the sequence count it was read at */
	uint32_t probes_seen;	  /* ... sh->nh.probes when this queue last probed */
	struct sockaddr_ll ll;	  /* ... where the packet socket sends: hop's device */
};

/*
 * Opens the plain GRE sending socket of c: raw, protocol GRE, bound to c->local, the kernel
 * writing the outer IP header as the template has it; it receives nothing. Its sends block
 * for at most timeout_ms when its buffer is full. Returns an fd or -errno.
 */
int tx_raw_open(const struct encap_cfg *c, unsigned timeout_ms);

/*
 * Opens a plain GRE packet socket: AF_PACKET, SOCK_RAW (whole frames), bound to no protocol,
 * so it receives nothing; with virtio headers (PACKET_VNET_HDR), by which a frame leaves its
 * inner checksum to the device. Its sends block for at most timeout_ms. Returns an fd or
 * -errno.
 */
int tx_packet_open(unsigned timeout_ms);

#endif
