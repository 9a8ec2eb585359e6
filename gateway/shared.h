/*
 * What all of gregw's workers share: written by the main thread before they start, then only
 * read, but for the stop flag and the tunnel table's publication (tunnels_pub.h: the table,
 * the workers' epochs, per-tunnel counters, GRE sequence numbers and receive windows, where a
 * worker also reads, never writes, the others' windows).
 */
#ifndef TUNBED_GW_SHARED_H
#define TUNBED_GW_SHARED_H

#include <stdbool.h>
#include <stdint.h>

#include "encap.h"
#include "fq.h"
#include "gw_limits.h"
#include "nexthop.h"
#include "steer.h"
#include "tunnels_pub.h"

struct worker_stats;

struct gw_shared {
	const struct encap_cfg *cfg;
	int stop_fd;		   /* eventfd: readable once the workers must stop */
	int stop;		   /* set (release) before stop_fd is written */
	unsigned mss4, mss6;	   /* MSS clamp targets; 0 when --mss-clamp is off */
	bool vnet_hdr;		   /* TUN reads and writes carry a virtio_net_hdr (--offload on) */
	bool tx_csum_partial;	   /* plain GRE on packet sockets: inner checksums left to the
				* device where TUN or the segmenting can (no GRE checksum to
				* cover them) */
	int tun_offloads;	   /* TUN_F_* in force: which superpackets TUN takes whole */
	bool udp_gso, udp_gro;	   /* GRE-in-UDP sends with UDP_SEGMENT, receives with UDP_GRO (the
				* kernel's offer, probed once: rx_udp.c) */
	bool aqm;		   /* --aqm codel on each worker's flow and receive queues */
	bool fair_queue;	   /* --fair-queue on: TUN reads wait in flows (fq.h) */
	bool tun_uring;		   /* --tun-io uring in force: TUN reads lent to io_uring */
	bool tx_merge;		   /* --tx-merge on: a flow's reads of a pass merged (merge.h) */
	enum fq_full fq_full;	   /* --fq-full: a full flow queue pauses the reads, or drops */
	unsigned fq_limit;	   /* --fq-limit: reads a worker's flow queue holds at most */
	uint64_t coalesce_hold_ns; /* --coalesce-hold: how long a superpacket waits for its burst */
	uint64_t aqm_target_ns, aqm_interval_ns;
	uint16_t udp_sports[UDP_TX_PORTS]; /* its source ports: the first worker picks them */
	struct steer_maps steer;	   /* GRE-in-UDP: the flow table of the steering programs */
	struct nexthop_pub nh;		   /* plain GRE on packet sockets: the next hop, published
					    * by the main thread (tx.h: tx_group_nexthop) */
	unsigned nworkers;
	/* The tunnel table in force, published by the main thread; each worker enters it at the
	 * top of a pass and leaves it before it sleeps. */
	struct tunnels_pub tunnels;
};

#endif
