/*
 * Wire audit accounting (see wire_audit.h). Directions are fixed by the tunnel's ends:
 * direction 0 runs from local to remote. A frame from neither end is a violation and is
 * counted in the totals only.
 */
#include "wire_audit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "inet.h"

const uint32_t wire_hist_max[WIRE_HIST_BUCKETS] = { 64, 127, 255, 511, 1023, 1518, UINT32_MAX };

int wire_audit_init(struct wire_audit *a, const struct wire_expect *e, int link)
{
	memset(a, 0, sizeof(*a));
	a->expect = *e;
	a->learn_peers = !e->has_peers;
	a->link = link;
	wire_seq_init(&a->dir[0].seq);
	wire_seq_init(&a->dir[1].seq);
	a->flows = calloc(WIRE_FLOW_SLOTS, sizeof(*a->flows));
	if (e->tunnels)
		a->tunnel_counts =
			calloc(e->tunnels->n ? e->tunnels->n : 1, sizeof(*a->tunnel_counts));
	return a->flows && (!e->tunnels || a->tunnel_counts) ? 0 : -ENOMEM;
}

void wire_audit_fini(struct wire_audit *a)
{
	free(a->flows);
	free(a->tunnel_counts);
	a->flows = NULL;
	a->tunnel_counts = NULL;
}

/* The flow's slot, found by flow_hash (flow.h) and linear probing; a new flow takes the first
 * free one while fewer than WIRE_FLOWS_MAX are tracked. */
static struct wire_flow *flow_get(struct wire_audit *a, const struct flow_key *k, int dir)
{
	uint32_t i = flow_hash(k) & (WIRE_FLOW_SLOTS - 1);

	for (;;) {
		struct wire_flow *fl = &a->flows[i];

		if (!fl->used) {
			if (a->nflows >= WIRE_FLOWS_MAX)
				return NULL;
			fl->used = true;
			fl->key = *k;
			fl->dir = (int8_t)dir;
			a->nflows++;
			return fl;
		}
		if (memcmp(&fl->key, k, sizeof(*k)) == 0)
			return fl;
		i = (i + 1) & (WIRE_FLOW_SLOTS - 1);
	}
}

static void record_violations(struct wire_audit *a, unsigned v)
{
	if (!v)
		return;
	a->violation_frames++;
	for (int k = 0; k < WIRE_V_MAX; k++) {
		if (!(v & (1u << k)))
			continue;
		if (a->violations[k] < WIRE_FIRST_FRAMES)
			a->first[k][a->violations[k]] = a->frames;
		a->violations[k]++;
	}
}

static void flow_port(struct wire_flow *fl, uint16_t port)
{
	for (unsigned i = 0; i < fl->nports; i++)
		if (fl->ports[i] == port)
			return;
	/* Past the table a port cannot be told new or seen: all that is known is "more". */
	if (fl->nports < WIRE_FLOW_PORTS)
		fl->ports[fl->nports++] = port;
	else
		fl->ports_more = true;
}

/* The packets a datagram stands for on the wire: a TCP superpacket's segments, else 1. */
static unsigned packets_of(const struct wire_frame *f)
{
	return f->segs > 1 ? f->segs : 1;
}

static void account_inner(struct wire_audit *a, struct wire_dir *d, const struct wire_frame *f,
			  uint64_t seq)
{
	unsigned n = packets_of(f), more = n - 1;
	struct wire_flow *fl;

	d->inner_frames += n;
	d->inner_bytes += f->inner_len + (uint64_t)more * f->seg_inner;
	d->overhead_bytes += (uint64_t)n * (f->outer_len - f->inner_len);
	fl = flow_get(a, &f->flow, f->dir);
	if (!fl) {
		/* No scoreboard: its payload cannot be told new or resent, so it is kept apart. */
		a->untracked_frames++;
		if (f->has_tcp)
			d->tcp_untracked_bytes += f->tcp_payload;
		return;
	}
	fl->frames += n;
	fl->bytes += f->inner_len + (uint64_t)more * f->seg_inner;
	if (f->has_gre && (f->gre.flags & GRE_F_SEQ)) {
		if (fl->seq_seen && seq < fl->seq_hi)
			d->flow_reordered++;
		else
			fl->seq_hi = seq;
		fl->seq_seen = true;
	}
	if (f->has_tcp) {
		struct wire_tcp_seg seg = { .seq = f->tcp_seq,
					    .len = f->tcp_payload,
					    .syn = f->tcp_flags & TCP_F_SYN,
					    .has_id = f->has_ip_id,
					    .id = f->ip_id };
		struct wire_tcp_result r = wire_tcp_add(&fl->tcp, &seg);

		d->tcp_payload_bytes += f->tcp_payload;
		d->tcp_new_bytes += r.new_bytes;
		d->tcp_late_bytes += r.late_bytes;
		d->tcp_resent_bytes += r.resent_bytes;
		d->tcp_unresolved_bytes += r.unresolved_bytes;
	}
	if (f->has_sport)
		flow_port(fl, f->udp_sport);
}

static unsigned hist_bucket(unsigned len)
{
	unsigned b = 0;

	while (len > wire_hist_max[b])
		b++;
	return b;
}

/* Accounts one datagram of a tunnel frame in its direction: a TCP superpacket as the segments
 * a NIC would cut, each with the link, outer and inner headers of the first, all full but the
 * last. */
static void account_datagram(struct wire_audit *a, const struct wire_frame *f, bool gso,
			     uint64_t ts_ns)
{
	struct wire_dir *d = &a->dir[f->dir];
	unsigned n = packets_of(f), more = n - 1;
	unsigned seg = f->frame_len - f->outer_len + f->seg_outer + f->seg_inner + f->seg_mss;
	uint64_t seq = 0;

	if (d->frames == 0)
		d->first_ns = ts_ns;
	d->last_ns = ts_ns;
	d->frames += n;
	d->bytes += f->frame_len +
		    (uint64_t)more * (f->frame_len - f->outer_len + f->seg_outer + f->seg_inner);
	d->ip_bytes += f->outer_len + (uint64_t)more * (f->seg_outer + f->seg_inner);
	if (more) {
		d->hist[hist_bucket(seg)] += more;
		d->hist[hist_bucket(f->frame_len - more * f->seg_mss)]++;
	} else {
		d->hist[hist_bucket(f->frame_len)]++;
	}
	if (gso || more)
		d->gso_datagrams += n;
	if (f->encap == WIRE_ENCAP_GRE_UDP) {
		d->gre_udp_frames += n;
		if (f->has_sport)
			d->udp_ports[f->udp_sport / 64] |= 1ull << (f->udp_sport % 64);
	} else {
		d->gre_frames += n;
	}
	/* Numbers of several tunnels interleave: a direction's accounting would be noise. */
	if (f->has_gre && (f->gre.flags & GRE_F_SEQ) &&
	    (!a->expect.tunnels || a->expect.tunnels->n == 1))
		seq = wire_seq_add(&d->seq, f->gre.seq);
	if (f->has_inner)
		account_inner(a, d, f, seq);
	if (f->has_inner && f->has_outer_ds) {
		unsigned in = f->inner_ds >> IP_DSCP_SHIFT;

		d->ecn[f->inner_ds & IP_ECN_MASK][f->outer_ds & IP_ECN_MASK]++;
		d->dscp_marked += in != 0;
		d->dscp_copied += in != 0 && (unsigned)f->outer_ds >> IP_DSCP_SHIFT == in;
	}
}

int wire_audit_frame(struct wire_audit *a, const uint8_t *p, size_t caplen, size_t len,
		     uint64_t ts_ns)
{
	struct wire_frame f;
	unsigned violations = 0;
	bool snapped = false, gso;
	int rc;

	rc = wire_decode(&a->expect, a->link, p, caplen, len, &f);
	if (rc < 0)
		return rc;
	a->frames++;
	if (a->frames == 1)
		a->first_ns = ts_ns;
	a->last_ns = ts_ns;
	if (f.encap == WIRE_ENCAP_NONE) {
		if (f.snapped)
			a->snapped_frames++;
		a->other_frames++;
		return 0;
	}
	a->tunnel_frames++;
	if (a->learn_peers && !a->expect.has_peers && f.src.family) {
		a->expect.local = f.src;
		a->expect.remote = f.dst;
		a->expect.has_peers = true;
		f.dir = 0;
	}
	gso = f.next != 0;
	if (f.dir >= 0) {
		a->dir[f.dir].gso_frames += gso || f.segs > 1;
		a->dir[f.dir].udp_csum_offloaded += f.udp_csum_offloaded;
	}
	/* A GSO super-frame's datagrams are one captured frame: its number, its violations. */
	for (;;) {
		violations |= f.violations;
		snapped |= f.snapped;
		if (f.dir >= 0)
			account_datagram(a, &f, gso, ts_ns);
		if (f.tunnel >= 0) {
			struct wire_tunnel_count *tc = &a->tunnel_counts[f.tunnel];

			tc->frames[f.dir] += packets_of(&f);
			tc->violation_frames += f.violations != 0;
			for (int k = 0; f.violations && k < WIRE_V_MAX; k++)
				tc->violations[k] += (f.violations >> k) & 1;
		} else if (a->expect.tunnels && f.dir >= 0 && f.has_gre) {
			a->no_tunnel_frames += packets_of(&f);
		}
		if (!f.next || wire_decode_next(&a->expect, p, caplen, len, &f, &f) < 0)
			break;
	}
	if (snapped)
		a->snapped_frames++;
	record_violations(a, violations);
	return 0;
}

void wire_audit_finish(struct wire_audit *a)
{
	wire_seq_finish(&a->dir[0].seq);
	wire_seq_finish(&a->dir[1].seq);
}
