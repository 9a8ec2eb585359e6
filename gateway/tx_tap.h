/*
 * The TAP transport of either encapsulation (tx_tap_gre_ops, tx_tap_udp_ops; tx.h): TCP
 * superpackets from TUN go whole, one write each, into a queue of a multi-queue TAP device in
 * gregw's namespace, whose tcx program (common/tcx.h) redirects them to the interface towards
 * the peer, which carries them whole or segments them (the kernel's tunnel segmentation, as
 * for its own tunnels). GRE-in-UDP is written whole with its outer headers and a virtio
 * header of GSO over a UDP tunnel (Linux 6.17); plain GRE as the inner packet, which the
 * program puts in GRE (bpf_skb_adjust_room), its key (or none) as the frame's Ethernet source
 * address carries it: the tunnel's, whatever the table says this pass. Everything else (one
 * packet, a superpacket too long for an outer packet or of a tunnel the TAP cannot carry, a
 * pass when the next hop is elsewhere or a probe is due) goes on the encapsulation's own
 * transport, the TAP's fallback, in the order it was queued.
 */
#ifndef TUNBED_GW_TX_TAP_H
#define TUNBED_GW_TX_TAP_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "inet.h"
#include "gw_limits.h"
#include "nexthop.h"

/* A worker's queue of the TAP. */
struct tx_tap {
	int fd;			/* the group's: not closed by the queue */
	struct nexthop_hop hop; /* the next hop as last read (sh->nh) */
	uint32_t hop_seen;	/* the sequence count it was read at */
	uint32_t probes_seen;	/* sh->nh.probes when this queue last cut a pass for a probe */
};

/* What the TAP's queues share: the main thread's. */
struct tx_tap_group {
	int fds[CONFIG_MAX_WORKERS]; /* the TAP's queues, one per worker; -1 when closed */
	unsigned nfds;
	int link_fd;		/* the tcx program's BPF link, or -1 */
	int ifindex;		/* the TAP's */
	char name[IF_NAMESIZE]; /* the TAP's, as the kernel named it */
	int redirect;		/* where its program sends: the interface towards the peer */
	unsigned vnet_len;	/* its virtio header: 24 over UDP (the tunnel's fields), else 10 */
	size_t whole_max;	/* the longest inner superpacket whose outer packet fits 16 bits */
	unsigned ip_hlen;	/* GRE-in-UDP: the outer IP header gregw writes */
	uint8_t outer[IPV6_HLEN + UDP_HLEN]; /* GRE-in-UDP: its outer IP and UDP template */
	/* Plain GRE: the Ethernet source address its program writes over the key a frame
	 * carries there, redirect's at start. */
	uint8_t src_mac[ETH_ALEN];
};

struct txq;

/* Marks the group's descriptors closed, before anything is opened. */
void tx_tap_group_clear(struct tx_tap_group *t);

/* txq_whole_max of a TAP transport's queue (tx.h): 0 also while the next hop's source address
 * is not the one the program writes (plain GRE). Worker thread. */
size_t tx_tap_whole_max(struct txq *q);

/*
 * Whether the TAP may carry whole the superpackets of a tunnel of gre_flags to peer, first
 * being the first peer (c->remote; both family's addresses): without sequence numbers and GRE
 * checksums, which are per segment and the kernel's segmentation cannot make them, and to the
 * first peer, whose next hop the frames follow (tx_packet.h). Pure.
 */
bool tx_tap_takes(unsigned gre_flags, int family, const uint8_t *peer, const uint8_t *first);

#endif
