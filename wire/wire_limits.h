/*
 * Every fixed size and bound of tunbed-wire, with where each number comes from: what the
 * options accept, how the capture is set up, how far decoding walks, and the tables the audit
 * allocates once, at init.
 */
#ifndef TUNBED_WIRE_LIMITS_H
#define TUNBED_WIRE_LIMITS_H

enum wire_limits {
	/* What the options accept (wire_options.c). */
	WIRE_TOP_DEFAULT = 10,		/* --top: inner flows listed */
	WIRE_TOP_MAX = 10000,		/* as many as tunbed-traffic's sessions */
	WIRE_TIME_MIN_MS = 100,		/* --time from 0.1 s, as tunbed-traffic's --time */
	WIRE_TIME_MAX_S = 86400,	/* to a day */
	WIRE_BUFFER_DEFAULT = 64 << 20, /* --buffer: the kernel's capture ring */
	WIRE_BUFFER_MIN = 1 << 20,	/* from 1 MiB */
	WIRE_BUFFER_MAX = 2147483647,	/* to what pcap_set_buffer_size's int holds */
	WIRE_MTU_MIN = 68,		/* --mtu: IPv4's minimum (RFC 791) */
	WIRE_MTU_MAX = 65535,		/* IP's total length field */
	WIRE_IFNAME_LEN = 16,		/* --iface: IFNAMSIZ, with the NUL */

	/* The live capture (wire_capture.c). */
	WIRE_SNAPLEN = 262144,		     /* whole frames, GSO super-frames included */
	WIRE_TIMEOUT_MS = 100,		     /* the kernel hands over a ring block this often */
	WIRE_DRAIN_MS = 3 * WIRE_TIMEOUT_MS, /* after the stop, for the last block to arrive */
	WIRE_FILTER_LEN = 256,		     /* the filter expression, port filled in */

	/* Decoding (wire_decode.c). */
	WIRE_VLAN_MAX = 2,     /* 802.1Q tags skipped in front of IP (QinQ at most) */
	WIRE_IPV6_EXT_MAX = 8, /* IPv6 extension headers walked before giving up */

	/* Accounting (wire_audit.c, wire_seq.c, wire_tcp.c). */
	WIRE_FIRST_FRAMES = 5,		      /* frame numbers kept for each kind of violation */
	WIRE_FLOWS_MAX = 1u << 16,	      /* inner flows tracked; more are counted untracked */
	WIRE_FLOW_SLOTS = 2 * WIRE_FLOWS_MAX, /* hash slots: the table stays half empty */
	WIRE_FLOW_PORTS = 4,		      /* outer UDP source ports counted per flow */
	/*
	 * Sequence numbers tracked below the highest: a late arrival or duplicate is recognised
	 * up to this far back. gregw's reordering is a batch or two of each worker (64 packets
	 * each), so 2^18 is far more than the wire will show; it costs 32 KiB a direction.
	 */
	WIRE_SEQ_WINDOW = 1u << 18,
	/*
	 * TCP holes remembered per flow. Four is what SACK can report (RFC 2018, section 3).
	 * A fifth hole, whether a segment leaves a gap above the highest byte or lands inside
	 * a hole and splits it in two, makes the lowest hole (the oldest) forgotten; its bytes,
	 * when they come, count as retransmitted.
	 */
	WIRE_TCP_HOLES = 4,
};

#endif
