/*
 * The key of an inner IP flow and its hash, shared by gregw's per-worker flow table
 * (gateway/flows.c) and the wire audit's flow table (wire/wire_audit.c). Pure: any thread.
 */
#ifndef TUNBED_FLOW_H
#define TUNBED_FLOW_H

#include <stdint.h>

/*
 * A flow's protocol, addresses and ports. End 0 and end 1 are either the source and the
 * destination of one direction (the wire audit, which keeps the directions apart) or the lower
 * and the higher end, so that both directions are one key (gregw's flow_key_from). Ports are in
 * host order, 0 for protocols without them and for later fragments; an IPv4 address fills the
 * first 4 bytes of its 16. Keys are hashed and compared as bytes (38, no padding): zero the
 * whole key before filling it.
 */
struct flow_key {
	uint8_t family; /* AF_INET or AF_INET6 */
	uint8_t proto;
	uint16_t port[2];
	uint8_t addr[2][16];
};

/*
 * A hash of k's bytes, never 0: the key as 64-bit words (the last one zero-filled), each mixed
 * in by a rotation and a multiplication (fxhash's step), then the high half folded onto the
 * low. Its low bits pick table slots and gregw's GRE-in-UDP source ports.
 */
uint32_t flow_hash(const struct flow_key *k);

#endif
