/*
 * Unit tests for common/thread.c's CPU planning: the CPUs of a set in order, those this
 * process may run on, the CPU each thread gets when threads take them in turn, and the check
 * of a CPU list against the CPUs this process may use.
 */
#include <sched.h>
#include <stdio.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <errno.h>

#include "check.h"
#include "log.h"
#include "parse.h"
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

/* thread_cpus_check on set, with stderr into a file: its return value, and the line in *line. */
static int cpus_check(const cpu_set_t *set, const char *val, char *line, size_t size)
{
	FILE *f = tmpfile();
	int saved = dup(2), rc;
	size_t n;

	fflush(stderr);
	dup2(fileno(f), 2);
	rc = thread_cpus_check("--cpus", val, set);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(f);
	n = fread(line, 1, size - 1, f);
	line[n] = '\0';
	fclose(f);
	return rc;
}

/*
 * Every CPU of the list must be one this process may run on: one the machine lacks, or one
 * outside the process's affinity, is named with the CPUs it may use, before any thread is
 * started on it (pthread_create said only "Invalid argument").
 */
static void test_check(void)
{
	char own_list[256], want[512], line[512];
	cpu_set_t own, set, narrowed;
	int cpus[CPU_SETSIZE], n;

	CHECK(sched_getaffinity(0, sizeof(own), &own) == 0);
	CHECK(format_cpulist(&own, own_list, sizeof(own_list)) > 0);

	/* The process's own CPUs pass, silently; so does one of them. */
	CHECK_INT(cpus_check(&own, own_list, line, sizeof(line)), 0);
	CHECK_STR(line, "");
	CHECK_INT(thread_cpu_unusable(&own, NULL), -1);
	n = thread_cpu_list(&own, cpus, CPU_SETSIZE);
	CPU_ZERO(&set);
	CPU_SET(cpus[n - 1], &set);
	CHECK_INT(thread_cpu_unusable(&set, NULL), -1);

	/* A CPU beyond the machine's: the last a cpu_set_t holds, and with one of ours. */
	CPU_ZERO(&set);
	CPU_SET(CPU_SETSIZE - 1, &set);
	CHECK(CPU_SETSIZE - 1 >= get_nprocs_conf());
	CHECK_INT(cpus_check(&set, "1023", line, sizeof(line)), -EINVAL);
	snprintf(want, sizeof(want),
		 "test_thread: --cpus 1023: no CPU 1023 on this machine (CPUs %s)\n", own_list);
	CHECK_STR(line, want);
	CPU_SET(cpus[0], &set);
	CHECK_INT(thread_cpu_unusable(&set, &narrowed), CPU_SETSIZE - 1);
	CHECK(CPU_EQUAL(&narrowed, &own));

	/* One the machine has but this process may not use: with the affinity cut to its first
	 * CPU, the second (a machine of one CPU has no such CPU to name). */
	if (n >= 2) {
		CPU_ZERO(&narrowed);
		CPU_SET(cpus[0], &narrowed);
		CHECK(sched_setaffinity(0, sizeof(narrowed), &narrowed) == 0);
		CPU_ZERO(&set);
		CPU_SET(cpus[0], &set);
		CPU_SET(cpus[1], &set);
		CHECK_INT(cpus_check(&set, "0-1", line, sizeof(line)), -EINVAL);
		snprintf(want, sizeof(want),
			 "test_thread: --cpus 0-1: CPU %d is not one this process may use (CPUs "
			 "%d)\n",
			 cpus[1], cpus[0]);
		CHECK_STR(line, want);
		CHECK(sched_setaffinity(0, sizeof(own), &own) == 0);
	}
}

int main(void)
{
	log_init("test_thread", LOG_LEVEL_WARN);
	test_list();
	test_list_own();
	test_pick();
	test_check();
	return check_done("test_thread");
}
