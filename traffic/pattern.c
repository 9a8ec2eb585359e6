/*
 * The deterministic byte stream that --verify sends and checks (see pattern.h). Whole 8-byte
 * words are generated and compared at once; only the ragged ends of a buffer go byte by byte.
 */
#include "pattern.h"

#include <endian.h>
#include <string.h>

enum {
	WORD = 8,
};

/* The golden-ratio increment of splitmix64; odd, so that word index * it is a bijection. */
#define GOLDEN 0x9e3779b97f4a7c15ull

/* The splitmix64 output function (S. Vigna), a bijection of 64-bit values. */
static inline uint64_t splitmix64(uint64_t x)
{
	uint64_t z = x + GOLDEN;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/*
 * Word w of the stream, already in memory order: byte i of the stream is byte i % 8,
 * little-endian, of splitmix64(seed ^ (i / 8) * GOLDEN), where splitmix64(x) is
 *   z = x + GOLDEN; z = (z ^ z >> 30) * 0xbf58476d1ce4e5b9; z = (z ^ z >> 27) * 0x94d049bb133111eb;
 *   return z ^ z >> 31;
 * all modulo 2^64. Fixing the byte order keeps the stream the same on every host.
 */
static inline uint64_t word_at(uint64_t seed, uint64_t w)
{
	return htole64(splitmix64(seed ^ w * GOLDEN));
}

void pattern_fill(uint64_t seed, uint64_t off, uint8_t *buf, size_t len)
{
	uint64_t w = off / WORD;
	size_t head = off % WORD;
	uint64_t v;

	if (len == 0)
		return;
	if (head) {
		size_t n = WORD - head < len ? WORD - head : len;

		v = word_at(seed, w++);
		memcpy(buf, (const uint8_t *)&v + head, n);
		buf += n;
		len -= n;
	}
	for (; len >= WORD; len -= WORD, buf += WORD) {
		v = word_at(seed, w++);
		memcpy(buf, &v, WORD);
	}
	if (len) {
		v = word_at(seed, w);
		memcpy(buf, &v, len);
	}
}

/* Index of the first differing byte of two words in memory order, given that they differ. */
static inline size_t first_diff(uint64_t a, uint64_t b)
{
	uint64_t x = le64toh(a ^ b);

	return (size_t)__builtin_ctzll(x) / 8;
}

/* Compares n bytes (n <= 8) of buf with bytes from..from+n of word v; -1 or the index. */
static long check_part(const uint8_t *buf, uint64_t v, size_t from, size_t n)
{
	uint64_t got = 0, want = 0;

	memcpy((uint8_t *)&got + from, buf, n);
	memcpy((uint8_t *)&want + from, (const uint8_t *)&v + from, n);
	if (got == want)
		return -1;
	return (long)(first_diff(got, want) - from);
}

long pattern_check(uint64_t seed, uint64_t off, const uint8_t *buf, size_t len)
{
	uint64_t w = off / WORD;
	size_t head = off % WORD;
	size_t pos = 0;
	long bad;

	if (len == 0)
		return -1;
	if (head) {
		size_t n = WORD - head < len ? WORD - head : len;

		bad = check_part(buf, word_at(seed, w++), head, n);
		if (bad >= 0)
			return bad;
		pos = n;
	}
	for (; len - pos >= WORD; pos += WORD) {
		uint64_t v = word_at(seed, w++), got;

		memcpy(&got, buf + pos, WORD);
		if (got != v)
			return (long)(pos + first_diff(got, v));
	}
	if (len > pos) {
		bad = check_part(buf + pos, word_at(seed, w), 0, len - pos);
		if (bad >= 0)
			return (long)pos + bad;
	}
	return -1;
}

uint64_t pattern_seed(uint64_t test_id, uint32_t session, int direction)
{
	/*
	 * session and direction fill disjoint halves of one word and splitmix64 is a bijection,
	 * so two directions or two sessions of one test never share a seed.
	 */
	uint64_t who = (uint64_t)session << 32 | (uint32_t)direction;

	return splitmix64(splitmix64(test_id) ^ who);
}
