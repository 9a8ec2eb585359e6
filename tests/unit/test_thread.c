/*
 * Unit tests for common/thread.c's CPU planning: the CPUs of a set in order, those this
 * process may run on, and the CPU each thread gets when threads take them in turn.
 */
#include <sched.h>

#include "check.h"
#include "thread.h"

enum { ROW_CPUS = 8 };

static void test_list(void)
{
	static const struct {
		const char *name;
		int in[ROW_CPUS], nin; /* the set's CPUs */
		int max;
		int want[ROW_CPUS], nwant;
	} rows[] = {
		{ "empty", { 0 }, 0, 8, { 0 }, 0 },
		{ "cpu 0", { 0 }, 1, 8, { 0 }, 1 },
		{ "gaps, ascending", { 5, 1, 3 }, 3, 8, { 1, 3, 5 }, 3 },
		{ "cut at max", { 0, 1, 2, 3, 4, 5 }, 6, 4, { 0, 1, 2, 3 }, 4 },
		{ "max 0", { 2, 3 }, 2, 0, { 0 }, 0 },
		{ "last CPU", { CPU_SETSIZE - 1, 7 }, 2, 8, { 7, CPU_SETSIZE - 1 }, 2 },
	};

	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		int got[ROW_CPUS] = { 0 }, n;
		cpu_set_t set;

		CPU_ZERO(&set);
		for (int i = 0; i < rows[r].nin; i++)
			CPU_SET(rows[r].in[i], &set);
		n = thread_cpu_list(&set, got, rows[r].max);
		CHECK_ROW(n == rows[r].nwant, rows[r].name);
		for (int i = 0; i < n && i < rows[r].nwant; i++)
			CHECK_ROW(got[i] == rows[r].want[i], rows[r].name);
	}
}

/* Without a set: this process's affinity, every CPU of it in order. */
static void test_list_own(void)
{
	int got[CPU_SETSIZE], n, count;
	cpu_set_t own;

	CHECK(sched_getaffinity(0, sizeof(own), &own) == 0);
	count = CPU_COUNT(&own);
	n = thread_cpu_list(NULL, got, CPU_SETSIZE);
	CHECK_INT(n, count);
	CHECK(n > 0);
	for (int i = 0; i < n; i++) {
		CHECK(CPU_ISSET(got[i], &own));
		if (i)
			CHECK(got[i] > got[i - 1]);
	}
	/* Cut at one: the lowest of them. */
	{
		int lowest = got[0], one[1] = { -1 };

		CHECK_INT(thread_cpu_list(NULL, one, 1), 1);
		CHECK_INT(one[0], lowest);
	}
}

static void test_pick(void)
{
	static const int cpus[] = { 4, 6, 9 };
	static const struct {
		const char *name;
		int n;
		unsigned i;
		int want;
	} rows[] = {
		{ "first", 3, 0, 4 },	{ "second", 3, 1, 6 },	       { "last", 3, 2, 9 },
		{ "wraps", 3, 3, 4 },	{ "wraps twice", 3, 7, 6 },    { "one CPU", 1, 5, 4 },
		{ "no CPU", 0, 0, -1 }, { "no CPU, later", 0, 9, -1 }, { "negative n", -1, 0, -1 },
	};

	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++)
		CHECK_ROW(thread_cpu_pick(cpus, rows[r].n, rows[r].i) == rows[r].want,
			  rows[r].name);
}

int main(void)
{
	test_list();
	test_list_own();
	test_pick();
	return check_done("test_thread");
}
