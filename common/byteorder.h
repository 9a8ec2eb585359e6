/*
 * Unaligned big-endian loads and stores for wire formats. Fields are read through memcpy,
 * never through a cast pointer, so that no alignment or aliasing rule is broken.
 */
#ifndef TUNBED_BYTEORDER_H
#define TUNBED_BYTEORDER_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

static inline uint16_t load_be16(const void *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return be16toh(v);
}

static inline uint32_t load_be32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return be32toh(v);
}

static inline uint64_t load_be64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return be64toh(v);
}

static inline void store_be16(void *p, uint16_t v)
{
	v = htobe16(v);
	memcpy(p, &v, sizeof(v));
}

static inline void store_be32(void *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, sizeof(v));
}

static inline void store_be64(void *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, sizeof(v));
}

#endif
