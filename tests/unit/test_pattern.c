/*
 * Unit tests for traffic/pattern.c: the stream matches a byte-at-a-time reference at any
 * offset and length, a fill is the concatenation of the fills of its pieces, and a check
 * reports exactly the first wrong byte.
 */
#include <stdbool.h>

#include "check.h"
#include "pattern.h"

enum {
	GUARD = 16,
	BUF = 8192,
};

/* The definition in pattern.h, one byte at a time, written apart from pattern.c. */
static uint8_t ref_byte(uint64_t seed, uint64_t i)
{
	uint64_t z = (seed ^ (i / 8) * 0x9e3779b97f4a7c15ull) + 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (uint8_t)(z >> (8 * (i % 8)));
}

static bool matches_ref(uint64_t seed, uint64_t off, const uint8_t *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != ref_byte(seed, off + i))
			return false;
	return true;
}

static const struct {
	uint64_t off;
	size_t len;
} ranges[] = {
	{ 0, 0 },
	{ 0, 1 },
	{ 0, 7 },
	{ 0, 8 },
	{ 0, 9 },
	{ 0, 16 },
	{ 0, 4096 },
	{ 1, 0 },
	{ 1, 1 },
	{ 1, 6 },
	{ 1, 7 },
	{ 1, 8 },
	{ 3, 5 },
	{ 3, 9 },
	{ 3, 13 },
	{ 7, 1 },
	{ 7, 2 },
	{ 7, 9 },
	{ 8, 8 },
	{ 13, 1500 },
	{ 4099, 17 },
	{ 5, 4095 },
	{ 1ull << 40, 64 },
	{ (1ull << 40) + 3, 61 },
	{ UINT64_MAX - 100, 50 },
	{ UINT64_MAX - 15, 15 },
};

static void test_fill_matches_reference(void)
{
	static uint8_t buf[BUF + 2 * GUARD];
	const uint64_t seed = 0x0123456789abcdefull;

	for (size_t r = 0; r < sizeof(ranges) / sizeof(ranges[0]); r++) {
		/* Start the buffer on every alignment too, not only the stream offset. */
		for (size_t shift = 0; shift < 8; shift += 3) {
			uint8_t *p = buf + GUARD + shift;
			char row[64];
			bool guards_intact = true;

			snprintf(row, sizeof(row), "off %" PRIu64 " len %zu at +%zu", ranges[r].off,
				 ranges[r].len, shift);
			memset(buf, 0xa5, sizeof(buf));
			pattern_fill(seed, ranges[r].off, p, ranges[r].len);
			CHECK_ROW(matches_ref(seed, ranges[r].off, p, ranges[r].len), row);
			for (size_t i = 0; i < sizeof(buf); i++)
				if ((buf + i < p || buf + i >= p + ranges[r].len) && buf[i] != 0xa5)
					guards_intact = false;
			CHECK_ROW(guards_intact, row);
			CHECK_ROW(pattern_check(seed, ranges[r].off, p, ranges[r].len) == -1, row);
		}
	}
}

static void test_known_answer(void)
{
	/*
	 * Computed apart from this code, with Python:
	 *   M=(1<<64)-1; G=0x9e3779b97f4a7c15
	 *   def sm(x): z=(x+G)&M; z=((z^(z>>30))*0xbf58476d1ce4e5b9)&M;
	 *              z=((z^(z>>27))*0x94d049bb133111eb)&M; return z^(z>>31)
	 *   [(sm(1^((i//8)*G&M))>>(8*(i%8)))&255 for i in range(16)]
	 */
	static const uint8_t want[16] = { 0xc1, 0x5c, 0x02, 0x89, 0xec, 0x2d, 0x0a, 0x91,
					  0xc9, 0x82, 0xf6, 0xdb, 0x67, 0xf8, 0x9f, 0xe9 };
	uint8_t got[16];

	pattern_fill(1, 0, got, sizeof(got));
	CHECK(memcmp(got, want, sizeof(want)) == 0);
	CHECK_INT(pattern_check(1, 0, want, sizeof(want)), -1);
	pattern_fill(1, 5, got, 7);
	CHECK(memcmp(got, want + 5, 7) == 0);
}

static void test_flipped_byte(void)
{
	static const struct {
		uint64_t off;
		size_t len, pos;
	} rows[] = {
		{ 0, 1, 0 },	{ 0, 8, 0 },	    { 0, 8, 7 },	{ 0, 9, 8 },
		{ 0, 64, 0 },	{ 0, 64, 31 },	    { 0, 64, 63 },	{ 3, 1, 0 },
		{ 3, 5, 4 },	{ 3, 200, 0 },	    { 3, 200, 4 },	{ 3, 200, 5 },
		{ 3, 200, 12 }, { 3, 200, 13 },	    { 3, 200, 100 },	{ 3, 200, 199 },
		{ 7, 2, 1 },	{ 13, 1500, 1499 }, { 13, 1500, 1496 },
	};
	static uint8_t buf[BUF];
	const uint64_t seed = 42;

	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		char row[64];

		snprintf(row, sizeof(row), "off %" PRIu64 " len %zu pos %zu", rows[r].off,
			 rows[r].len, rows[r].pos);
		pattern_fill(seed, rows[r].off, buf, rows[r].len);
		buf[rows[r].pos] ^= 0x10;
		CHECK_ROW(pattern_check(seed, rows[r].off, buf, rows[r].len) == (long)rows[r].pos,
			  row);
		/* A second bad byte further on does not hide the first. */
		if (rows[r].pos + 1 < rows[r].len) {
			buf[rows[r].len - 1] ^= 0x01;
			CHECK_ROW(pattern_check(seed, rows[r].off, buf, rows[r].len) ==
					  (long)rows[r].pos,
				  row);
		}
	}
}

/* Index of the first byte where the streams (seed_a, off_a) and (seed_b, off_b) differ. */
static long ref_first_diff(uint64_t seed_a, uint64_t off_a, uint64_t seed_b, uint64_t off_b,
			   size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (ref_byte(seed_a, off_a + i) != ref_byte(seed_b, off_b + i))
			return (long)i;
	return -1;
}

static void test_wrong_stream(void)
{
	static const struct {
		uint64_t seed, off, wrong_seed, wrong_off;
		size_t len;
	} rows[] = {
		{ 1, 0, 2, 0, 64 },	   { 1, 3, 2, 3, 64 },
		{ 1, 0, 1, 1, 64 },	   { 1, 5, 1, 6, 64 },
		{ 1, 8, 1, 7, 64 },	   { 1, 0, 1, 8, 64 },
		{ 9, 100, 9, 1100, 1000 }, { 7, 0, 7 ^ (1ull << 63), 0, 8 },
	};
	uint8_t buf[1024];

	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		long want = ref_first_diff(rows[r].seed, rows[r].off, rows[r].wrong_seed,
					   rows[r].wrong_off, rows[r].len);
		char row[48];

		snprintf(row, sizeof(row), "row %zu", r);
		pattern_fill(rows[r].wrong_seed, rows[r].wrong_off, buf, rows[r].len);
		CHECK_ROW(want >= 0 && want < 2, row);
		CHECK_ROW(pattern_check(rows[r].seed, rows[r].off, buf, rows[r].len) == want, row);
	}
}

static void test_stream_pieces(void)
{
	static const size_t cuts[][4] = {
		{ 1, 2, 3, 4 },	 { 7, 8, 9, 10 },   { 5, 13, 21, 1000 },
		{ 0, 0, 8, 16 }, { 3, 3, 3, 2999 }, { 1500, 1501, 2999, 3000 },
	};
	static uint8_t whole[3000], pieces[3000];
	const uint64_t seed = 77, off = 12345;

	pattern_fill(seed, off, whole, sizeof(whole));
	for (size_t r = 0; r < sizeof(cuts) / sizeof(cuts[0]); r++) {
		size_t from = 0;
		char row[32];

		snprintf(row, sizeof(row), "cuts %zu", r);
		memset(pieces, 0, sizeof(pieces));
		for (size_t k = 0; k <= 4; k++) {
			size_t to = k < 4 ? cuts[r][k] : sizeof(pieces);

			pattern_fill(seed, off + from, pieces + from, to - from);
			from = to;
		}
		CHECK_ROW(memcmp(whole, pieces, sizeof(whole)) == 0, row);
	}
}

static void test_seed(void)
{
	enum { SESSIONS = 100 };
	uint64_t seeds[SESSIONS * 2 + 1];
	size_t n = 0;
	bool distinct = true;

	for (uint32_t s = 0; s < SESSIONS; s++)
		for (int d = 0; d < 2; d++)
			seeds[n++] = pattern_seed(7, s, d);
	seeds[n++] = pattern_seed(8, 0, 0);
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (seeds[i] == seeds[j])
				distinct = false;
	CHECK(distinct);
	CHECK_U64(pattern_seed(7, 3, 1), pattern_seed(7, 3, 1));
	/* Both ends of a session compute this, maybe from different builds: pin it. */
	CHECK_U64(pattern_seed(7, 3, 1), 0x63e0fc642041b554ull);
}

int main(void)
{
	test_fill_matches_reference();
	test_known_answer();
	test_flipped_byte();
	test_wrong_stream();
	test_stream_pieces();
	test_seed();
	return check_done("test_pattern");
}
