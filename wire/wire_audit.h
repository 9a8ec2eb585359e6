/*
 * The wire audit's accounting (docs/wire.md): every decoded frame lands here. Violations by
 * kind with the first frame numbers, per-direction volume, overhead, sizes, sequence numbers
 * and TCP retransmissions, and a fixed table of inner flows. The table is allocated once, at
 * init; accounting a frame never allocates.
 */
#ifndef TUNBED_WIRE_AUDIT_H
#define TUNBED_WIRE_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire_limits.h"
#include "wire_decode.h"
#include "wire_seq.h"
#include "wire_tcp.h"

enum {
	WIRE_HIST_BUCKETS = 7, /* frame sizes, see wire_hist_max */
	WIRE_PORTS = 65536,    /* every UDP port: a bit each in udp_ports */
};

/* Upper bound (inclusive) of each frame size bucket, in bytes; the last one is UINT32_MAX. */
extern const uint32_t wire_hist_max[WIRE_HIST_BUCKETS];

/* Per direction, a GSO super-frame counts as the datagrams it carries (wire_decode.h). */
struct wire_dir {
	uint64_t frames, bytes; /* frames and their length on the link */
	uint64_t ip_bytes;	/* outer IP packets */
	uint64_t gre_frames, gre_udp_frames;
	uint64_t gso_frames;	     /* captured frames that carried several datagrams */
	uint64_t gso_datagrams;	     /* the datagrams those carried, counted in frames */
	uint64_t udp_csum_offloaded; /* captured frames whose UDP checksum was left to offload */
	uint64_t inner_frames, inner_bytes; /* frames whose inner packet was read, and its bytes */
	uint64_t overhead_bytes;	    /* outer IP length minus inner length, same frames */
	uint64_t hist[WIRE_HIST_BUCKETS];
	uint64_t tcp_payload_bytes;    /* inner TCP payload of tracked flows, resent included */
	uint64_t tcp_new_bytes;	       /* seen for the first time on its flow (wire_tcp.h) */
	uint64_t tcp_late_bytes;       /* the part of those that came after later data */
	uint64_t tcp_resent_bytes;     /* the part of those sent after that later data */
	uint64_t tcp_unresolved_bytes; /* the part of late bytes whose sending order is unknown */
	uint64_t tcp_untracked_bytes;  /* inner TCP payload of flows that found no slot */
	uint64_t flow_reordered;       /* GRE sequence below the highest of the same inner flow */
	uint64_t ecn[4][4];	       /* frames by [inner][outer] ECN codepoint (enum ip_ecn) */
	uint64_t dscp_marked;	       /* frames whose inner DSCP is not 0 */
	uint64_t dscp_copied;	       /* of those, the outer DSCP the same */
	uint64_t first_ns, last_ns;    /* capture time of the first and last frame */
	struct wire_seq seq;
	uint64_t udp_ports[WIRE_PORTS / 64]; /* outer UDP source ports seen (GRE-in-UDP) */
};

struct wire_flow {
	struct flow_key key;
	bool used;
	int8_t dir;
	bool seq_seen;
	uint8_t nports;	 /* distinct outer UDP source ports, up to WIRE_FLOW_PORTS: in ports */
	bool ports_more; /* a port other than those came too: nports is then a lower bound */
	uint16_t ports[WIRE_FLOW_PORTS];
	struct wire_tcp tcp;
	uint64_t seq_hi; /* highest GRE sequence (extended) seen */
	uint64_t frames, bytes;
};

/* --tunnels: one tunnel's frames (a superpacket as its segments, as in struct wire_dir). */
struct wire_tunnel_count {
	uint64_t frames[2];		 /* by direction: 0 from local to the tunnel's peer */
	uint64_t violation_frames;	 /* of those, frames with at least one violation */
	uint64_t violations[WIRE_V_MAX]; /* ... by kind */
};

struct wire_audit {
	struct wire_expect expect;
	bool learn_peers; /* the ends were not given: the first tunnel frame names them */
	int link;
	uint64_t frames;	   /* every frame read; frame numbers count from 1 */
	uint64_t tunnel_frames;	   /* GRE or GRE-in-UDP, whole or broken (wire_decode) */
	uint64_t other_frames;	   /* anything else, also frames that cannot be told: ignored */
	uint64_t snapped_frames;   /* cut short by the capture: checks past the cut skipped */
	uint64_t violation_frames; /* tunnel frames with at least one violation */
	uint64_t violations[WIRE_V_MAX];
	uint64_t first[WIRE_V_MAX][WIRE_FIRST_FRAMES];
	uint64_t first_ns, last_ns;
	struct wire_dir dir[2];
	struct wire_flow *flows; /* WIRE_FLOW_SLOTS entries */
	size_t nflows;
	uint64_t untracked_frames; /* inner packets of flows that found no slot */
	/* --tunnels (expect.tunnels): each tunnel's frames, in the file's order, and those
	 * between local and a peer that matched no tunnel of it (no_key, bad_key). */
	struct wire_tunnel_count *tunnel_counts;
	uint64_t no_tunnel_frames;
};

/*
 * Prepares a for frames of link type link, checked against e; without e->has_peers the
 * first tunnel frame's addresses become local and remote. With e->tunnels (which must
 * outlive a), each tunnel's frames are counted, and a direction's sequence numbers are
 * accounted (struct wire_dir's seq) only when there is one tunnel: each tunnel numbers its own.
 * Returns 0 or -ENOMEM.
 */
int wire_audit_init(struct wire_audit *a, const struct wire_expect *e, int link);
void wire_audit_fini(struct wire_audit *a);

/*
 * Accounts one frame (caplen of len bytes captured at ts_ns): each datagram of a GSO
 * super-frame in its direction, its violations once, under its frame number. Returns 0, or
 * -EPROTONOSUPPORT if the link type is not one the decoder reads.
 */
int wire_audit_frame(struct wire_audit *a, const uint8_t *p, size_t caplen, size_t len,
		     uint64_t ts_ns);

/* Closes the sequence windows; call once after the last frame, before reading results. */
void wire_audit_finish(struct wire_audit *a);

#endif
