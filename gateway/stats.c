/*
 * Counter names, and the receive window of sequence numbers (see stats.h; RFC 2890, 2.2;
 * serial arithmetic, RFC 1982).
 */
#include "stats.h"

#include <string.h>

#include "gw_limits.h"

static const char *const names[STAT_MAX] = {
	[STAT_TUN_RX_PACKETS] = "tun_rx_packets",
	[STAT_TUN_RX_BYTES] = "tun_rx_bytes",
	[STAT_WIRE_TX_PACKETS] = "wire_tx_packets",
	[STAT_WIRE_TX_BYTES] = "wire_tx_bytes",
	[STAT_WIRE_RX_PACKETS] = "wire_rx_packets",
	[STAT_WIRE_RX_BYTES] = "wire_rx_bytes",
	[STAT_TUN_TX_PACKETS] = "tun_tx_packets",
	[STAT_TUN_TX_BYTES] = "tun_tx_bytes",
	[STAT_TX_BATCHES] = "tx_batches",
	[STAT_RX_BATCHES] = "rx_batches",
	[STAT_ICMP_SENT] = "icmp_sent",
	[STAT_ICMP_LIMITED] = "icmp_limited",
	[STAT_MSS_CLAMPED] = "mss_clamped",
	[STAT_SEQ_PACKETS] = "seq_packets",
	[STAT_SEQ_REORDERED] = "seq_reordered",
	[STAT_SEQ_DUPLICATE] = "seq_duplicate",
	[STAT_SEQ_OUTSIDE] = "seq_out_of_window",
	[STAT_SEQ_RESYNCS] = "seq_resyncs",
	[STAT_TUN_READS] = "tun_reads",
	[STAT_TUN_WRITES] = "tun_writes",
	[STAT_GSO_SUPERPACKETS] = "gso_superpackets",
	[STAT_COALESCED_SUPERPACKETS] = "coalesced_superpackets",
	[STAT_COALESCE_BAD_CSUM] = "coalesce_bad_csum",
	[STAT_AQM_MARKED] = "aqm_marked",
	[STAT_UDP_GSO_SENDS] = "udp_gso_sends",
	[STAT_UDP_GRO_READS] = "udp_gro_reads",
	[STAT_UDP_WHOLE_READS] = "udp_whole_reads",
	[STAT_UDP_CSUM_PARTIAL] = "udp_csum_partial",
	[STAT_GRE_GRO_READS] = "gre_gro_reads",
	[STAT_TUN_CUT_SUPERPACKETS] = "tun_cut_superpackets",
	[STAT_WIRE_TX_IP] = "wire_tx_ip",
	[STAT_TAP_WRITES] = "tap_writes",
	[STAT_TAP_SEGMENTS] = "tap_segments",
	[STAT_TUN_READ_CALLS] = "tun_read_calls",
	[STAT_TUN_WRITE_CALLS] = "tun_write_calls",
	[STAT_SEND_CALLS] = "send_calls",
	[STAT_RECV_CALLS] = "recv_calls",
	[STAT_POLLS] = "polls",
	[STAT_RX_SOCKET_ERRORS] = "rx_socket_errors",
	[STAT_TUN_READ_PAUSES] = "tun_read_pauses",
	[STAT_ECN_ALARMS] = "ecn_alarms",
	[STAT_TX_MERGED_READS] = "tx_merged_reads",
	[STAT_TX_AQM_MARKED] = "tx_aqm_marked",
};

const char *stat_name(enum stat_counter c)
{
	return c < STAT_MAX ? names[c] : "?";
}

const char *stat_seg_bucket_name(unsigned b)
{
	static const char *const buckets[STAT_SEG_BUCKETS] = { "1",    "2",	"3-4",	 "5-8",
							       "9-16", "17-32", "33-64", "65+" };

	return b < STAT_SEG_BUCKETS ? buckets[b] : "?";
}

/* The window's fields other threads read: relaxed stores, the id last (see publish). */
static void set64(int64_t *p, int64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
}

static void setu64(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
}

/* The highest number of a window, as a 32-bit sequence number. */
static uint32_t top(uint32_t first, int64_t hi)
{
	return first + (uint32_t)hi;
}

/* Serial distance (RFC 1982) within the window's reach, either way. */
static bool near(uint32_t a, uint32_t b)
{
	int32_t d = (int32_t)(a - b);

	return d > -SEQ_WINDOW && d < SEQ_WINDOW;
}

/*
 * Replaces the published window e with *n. A reader takes the id before and after the
 * other fields and keeps them only when both are the same and not 0 (seq_read); an id never
 * comes back to a window right after it left, so a reader cannot mistake a mix for either.
 */
static void publish(struct seq_era *e, const struct seq_era *n)
{
	__atomic_store_n(&e->id, 0, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&e->first, n->first, __ATOMIC_RELAXED);
	set64(&e->lo, n->lo);
	set64(&e->hi, n->hi);
	setu64(&e->packets, n->packets);
	setu64(&e->dups, n->dups);
	__atomic_store_n(&e->id, n->id, __ATOMIC_RELEASE);
}

bool stats_seq_read(const struct seq_era *e, struct seq_era *out)
{
	uint32_t id = __atomic_load_n(&e->id, __ATOMIC_ACQUIRE);

	if (!id)
		return false;
	out->first = __atomic_load_n(&e->first, __ATOMIC_RELAXED);
	out->lo = __atomic_load_n(&e->lo, __ATOMIC_RELAXED);
	out->hi = __atomic_load_n(&e->hi, __ATOMIC_RELAXED);
	out->packets = __atomic_load_n(&e->packets, __ATOMIC_RELAXED);
	out->dups = __atomic_load_n(&e->dups, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	out->id = __atomic_load_n(&e->id, __ATOMIC_RELAXED);
	return out->id == id;
}

/* Takes extended number x into window e. */
static void take(struct seq_era *e, int64_t x)
{
	if (x < e->lo)
		set64(&e->lo, x);
	if (x > e->hi)
		set64(&e->hi, x);
	setu64(&e->packets, e->packets + 1);
}

/* Makes *n w's window, keeping the one it replaces for a way back (none before the first). */
static void replace(struct seq_window *w, const struct seq_era *n)
{
	struct seq_era old = w->seq;

	publish(&w->seq, n);
	if (old.id)
		w->saved = old;
}

/* An era id no worker's window of the tunnel has, nor w's saved one: above all of them. Two
 * workers that restart at once may pick the same one; the control thread then puts them on
 * one base. */
static uint32_t new_id(const struct seq_window *w, const struct seq_window *peers, unsigned npeers)
{
	uint32_t id = w->saved.id > w->seq.id ? w->saved.id : w->seq.id;

	for (unsigned i = 0; i < npeers; i++) {
		uint32_t v = __atomic_load_n(&peers[i].seq.id, __ATOMIC_RELAXED);

		id = v > id ? v : id;
	}
	return id + 1;
}

/*
 * A number far from w's window but within reach of another worker's: the tunnel's numbers
 * went on while this worker saw none (its flows were idle). w joins that worker's era, back
 * to its saved window if that is the one, and takes the number. False when no other worker's
 * window is near it.
 */
static bool join(struct seq_window *w, const struct seq_window *peers, unsigned npeers,
		 uint32_t seq)
{
	for (unsigned i = 0; i < npeers; i++) {
		struct seq_era p;
		int64_t x;

		if (&peers[i] == w || !stats_seq_read(&peers[i].seq, &p) ||
		    !near(seq, top(p.first, p.hi)))
			continue;
		x = p.hi + (int32_t)(seq - top(p.first, p.hi));
		if (p.id != w->seq.id) {
			struct seq_era n = { .id = p.id, .first = p.first, .lo = x, .hi = x };

			replace(w, w->saved.id == p.id ? &w->saved : &n);
		}
		/* On w's own base, which may differ from the other worker's. */
		take(&w->seq, x + (int32_t)(p.first - w->seq.first));
		return true;
	}
	return false;
}

/* SEQ_RESYNC_RUN numbers in a row out of the window: it restarts on them, back on the
 * window before if they follow that one (a spoofed run the peer's numbers now undo), or as
 * a new one (a peer that restarted), and takes them. */
static void resync(struct seq_window *w, struct worker_stats *s, const struct seq_window *peers,
		   unsigned npeers)
{
	struct seq_era *e = &w->seq, n = { .first = w->run_first };
	int64_t last;

	stat_add(&s->ctr[STAT_SEQ_RESYNCS], 1);
	if (w->saved.id && near(w->run_last, top(w->saved.first, w->saved.hi))) {
		n = w->saved;
	} else {
		n.id = new_id(w, peers, npeers);
	}
	replace(w, &n);
	last = e->hi + (int32_t)(w->run_last - top(e->first, e->hi));
	take(e, last - (int32_t)(w->run_last - w->run_first));
	take(e, last);
	setu64(&e->packets, e->packets + w->run - 2);
	w->run = 0;
}

bool stats_seq(struct seq_window *w, struct worker_stats *s, const struct seq_window *peers,
	       unsigned npeers, uint32_t seq)
{
	struct seq_era *e = &w->seq;

	stat_add(&s->ctr[STAT_SEQ_PACKETS], 1);
	if (e->id && near(seq, top(e->first, e->hi))) {
		take(e, e->hi + (int32_t)(seq - top(e->first, e->hi)));
		return true;
	}
	/* Numbers taken in between (in the window, or joined) do not break a run. */
	if (join(w, peers, npeers, seq))
		return true;
	if (!e->id) {
		struct seq_era n = { .id = new_id(w, peers, npeers), .first = seq, .packets = 1 };

		replace(w, &n);
		return true;
	}
	stat_add(&s->ctr[STAT_SEQ_OUTSIDE], 1);
	if (w->run && near(seq, w->run_last)) {
		w->run++;
	} else {
		w->run = 1;
		w->run_first = seq;
	}
	w->run_last = seq;
	if (w->run >= SEQ_RESYNC_RUN)
		resync(w, s, peers, npeers);
	return false;
}

void stats_seq_duplicate(struct seq_window *w, struct worker_stats *s)
{
	stat_add(&s->ctr[STAT_SEQ_DUPLICATE], 1);
	setu64(&w->seq.dups, w->seq.dups + 1);
}

void stats_seq_merge(const struct seq_era *eras, unsigned n, struct seq_summary *out)
{
	uint64_t best = 0, distinct = 0;
	uint32_t id = 0, base = 0;
	int64_t lo = 0, hi = 0;

	memset(out, 0, sizeof(*out));
	for (unsigned i = 0; i < n; i++) {
		uint64_t sum = 0;

		if (!eras[i].id)
			continue;
		for (unsigned k = 0; k < n; k++)
			sum += eras[k].id == eras[i].id ? eras[k].packets : 0;
		if (!id || sum > best || (sum == best && eras[i].id > id)) {
			best = sum;
			id = eras[i].id;
		}
	}
	for (unsigned i = 0; i < n; i++) {
		const struct seq_era *e = &eras[i];
		int64_t shift;

		if (!id || e->id != id)
			continue;
		if (!out->any)
			base = e->first;
		shift = (int32_t)(e->first - base);
		if (!out->any || shift + e->lo < lo)
			lo = shift + e->lo;
		if (!out->any || shift + e->hi > hi)
			hi = shift + e->hi;
		distinct += e->packets - e->dups;
		out->any = true;
	}
	if (!out->any)
		return;
	out->lowest = base + (uint32_t)lo;
	out->highest = base + (uint32_t)hi;
	out->lost = (uint64_t)(hi - lo + 1) > distinct ? (uint64_t)(hi - lo + 1) - distinct : 0;
}
