/*
 * Names of drop reasons for telemetry (see drop.h).
 */
#include "drop.h"

static const char *const names[DROP_MAX] = {
	[DROP_NONE] = "none",
	[DROP_TRUNCATED] = "truncated",
	[DROP_ZERO_LENGTH] = "zero_length",
	[DROP_BAD_OUTER] = "bad_outer",
	[DROP_OUTER_FRAGMENT] = "outer_fragment",
	[DROP_UNKNOWN_PEER] = "unknown_peer",
	[DROP_BAD_VERSION] = "bad_version",
	[DROP_BAD_FLAGS] = "bad_flags",
	[DROP_BAD_KEY] = "bad_key",
	[DROP_NO_SEQ] = "no_seq",
	[DROP_NO_CSUM] = "no_csum",
	[DROP_BAD_CSUM] = "bad_csum",
	[DROP_BAD_PROTO] = "bad_proto",
	[DROP_BAD_INNER] = "bad_inner",
	[DROP_SPOOFED_SOURCE] = "spoofed_source",
	[DROP_TUNNEL_LOOP] = "tunnel_loop",
	[DROP_TUN_WRITE] = "tun_write",
	[DROP_AQM] = "aqm",
	[DROP_ECN_CE_NOT_ECT] = "ecn_ce_not_ect",
	[DROP_TX_BAD_INNER] = "tx_bad_inner",
	[DROP_TX_TOO_BIG] = "tx_too_big",
	[DROP_TX_SEND] = "tx_send",
	[DROP_TX_FQ_OVERFLOW] = "tx_fq_overflow",
	[DROP_TX_NO_TUNNEL] = "tx_no_tunnel",
	[DROP_TX_AQM] = "tx_aqm",
};

const char *drop_name(enum drop_reason r)
{
	return (r >= 0 && r < DROP_MAX) ? names[r] : "?";
}
