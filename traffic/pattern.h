/*
 * The deterministic byte stream of a session: what a sender writes and a --verify receiver
 * checks, so that every byte is known from (seed, offset) alone, wherever it lands. Pure.
 */
#ifndef TUNBED_TR_PATTERN_H
#define TUNBED_TR_PATTERN_H

#include <stddef.h>
#include <stdint.h>

/*
 * The stream of seed: byte i is byte (i % 8) of mix64(seed, i / 8), little-endian, where
 * mix64 is a 64-bit finalizer (splitmix64 of seed ^ (word index * odd constant)), so that a
 * byte at the wrong offset, or of another session, is caught.
 */

/* Fills buf with len bytes of the stream of seed starting at stream offset off. */
void pattern_fill(uint64_t seed, uint64_t off, uint8_t *buf, size_t len);

/*
 * Checks len bytes of buf against the stream of seed at offset off. Returns -1 if they all
 * match, else the index in buf of the first byte that does not.
 */
long pattern_check(uint64_t seed, uint64_t off, const uint8_t *buf, size_t len);

/* Seed of one direction of one session: both ends compute it from what the hello carries. */
uint64_t pattern_seed(uint64_t test_id, uint32_t session, int direction);

#endif
