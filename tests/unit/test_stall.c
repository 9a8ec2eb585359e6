/*
 * Unit tests for traffic/conn.c's receive stall (stream_stall_note): the longest gap between two
 * reads with data, none before the first, a clock that does not move, a new connection's
 * stream starting again, and only the part of a gap inside the measured window.
 */
#include <stdint.h>

#include "check.h"
#include "conn.h"

static uint64_t stall_of(const uint64_t *reads, size_t n)
{
	struct stream s;

	stream_init(&s, 1);
	for (size_t i = 0; i < n; i++)
		stream_stall_note(&s, reads[i]);
	return s.stall_max_ns;
}

static void test_table(void)
{
	static const struct {
		const char *name;
		uint64_t reads[8];
		size_t n;
		uint64_t want;
	} rows[] = {
		{ "no read", { 0 }, 0, 0 },
		{ "one read: no gap, whenever it came", { 5000000000 }, 1, 0 },
		{ "two reads", { 1000, 4000 }, 2, 3000 },
		{ "the longest of three gaps", { 100, 200, 10200, 10300 }, 4, 10000 },
		{ "the longest last", { 100, 200, 300, 900 }, 4, 600 },
		{ "reads at one instant", { 700, 700, 700 }, 3, 0 },
		{ "a read timed earlier changes nothing", { 1000, 500, 1600 }, 3, 600 },
		{ "a 10 ms stall among 1 us reads",
		  { 1000, 2000, 3000, 10003000, 10004000 },
		  5,
		  10000000 },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		CHECK_ROW(stall_of(rows[i].reads, rows[i].n) == rows[i].want, rows[i].name);
}

/* A new connection's stream (stream_init) starts with no read: the gap across two connections
 * is no stall of either. */
static void test_new_stream(void)
{
	struct stream s;

	stream_init(&s, 1);
	stream_stall_note(&s, 1000);
	stream_stall_note(&s, 3000);
	CHECK(s.stall_max_ns == 2000);
	stream_init(&s, 1);
	CHECK(s.stall_max_ns == 0 && s.last_rx_ns == 0);
	stream_stall_note(&s, 9000000);
	CHECK(s.stall_max_ns == 0);
}

/* Only a gap's part inside the window (the measured seconds) counts. */
static void test_window(void)
{
	struct stream s;

	stream_init(&s, 1);
	s.window_from = 1000000;
	s.window_to = 5000000;
	stream_stall_note(&s, 1000);
	stream_stall_note(&s, 300000); /* a gap of the warm-up alone */
	CHECK(s.stall_max_ns == 0);
	stream_stall_note(&s, 1200000); /* 900 us, 200 of them measured */
	CHECK(s.stall_max_ns == 200000);
	stream_stall_note(&s, 1500000);
	CHECK(s.stall_max_ns == 300000);
	stream_stall_note(&s, 9000000); /* past the end: up to window_to */
	CHECK(s.stall_max_ns == 3500000);
	stream_stall_note(&s, 9500000); /* after the window: nothing */
	CHECK(s.stall_max_ns == 3500000);
}

int main(void)
{
	test_table();
	test_new_stream();
	test_window();
	return check_done("test_stall");
}
