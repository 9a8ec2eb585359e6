/*
 * Counter names and sequence number extension (see stats.h).
 */
#include "stats.h"

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
	[STAT_TUN_READS] = "tun_reads",
	[STAT_TUN_WRITES] = "tun_writes",
	[STAT_GSO_SUPERPACKETS] = "gso_superpackets",
	[STAT_GRO_SUPERPACKETS] = "gro_superpackets",
	[STAT_GRO_BAD_CSUM] = "gro_bad_csum",
	[STAT_AQM_MARKED] = "aqm_marked",
	[STAT_UDP_GSO_SENDS] = "udp_gso_sends",
	[STAT_UDP_GRO_READS] = "udp_gro_reads",
};

const char *stat_name(enum stat_counter c)
{
	return c < STAT_MAX ? names[c] : "?";
}

void stats_seq(struct worker_stats *s, uint32_t seq)
{
	int64_t cur;

	if (stat_read(&s->ctr[STAT_SEQ_PACKETS]) == 0) {
		__atomic_store_n(&s->seq_first, seq, __ATOMIC_RELAXED);
		s->seq_last = seq;
		s->seq_cur = 0;
		stat_add(&s->ctr[STAT_SEQ_PACKETS], 1);
		return;
	}
	/* Serial arithmetic (RFC 1982): a step of less than 2^31 either way is a real one. */
	cur = s->seq_cur + (int32_t)(seq - s->seq_last);
	s->seq_last = seq;
	s->seq_cur = cur;
	if (cur < s->seq_lo)
		__atomic_store_n(&s->seq_lo, cur, __ATOMIC_RELAXED);
	if (cur > s->seq_hi)
		__atomic_store_n(&s->seq_hi, cur, __ATOMIC_RELAXED);
	stat_add(&s->ctr[STAT_SEQ_PACKETS], 1);
}
