/*
 * The flow key's hash (see flow.h).
 */
#include "flow.h"

#include <string.h>

_Static_assert(sizeof(struct flow_key) == 38, "struct flow_key is hashed as bytes: no padding");

/*
 * Five multiplications per packet where FNV-1a over the bytes took one per byte (gregw's
 * flow_get was 2.8% of the box's samples at 8 sessions with FNV-1a).
 */
uint32_t flow_hash(const struct flow_key *k)
{
	const uint8_t *p = (const uint8_t *)k;
	uint64_t h = 0;

	for (size_t i = 0; i < sizeof(*k); i += 8) {
		uint64_t x = 0;

		memcpy(&x, p + i, sizeof(*k) - i < 8 ? sizeof(*k) - i : 8);
		h = ((h << 5 | h >> 59) ^ x) * 0x517cc1b727220a95u;
	}
	h ^= h >> 32;
	return (uint32_t)h ? (uint32_t)h : 1;
}
