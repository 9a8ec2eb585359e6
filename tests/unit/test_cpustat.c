/*
 * Unit tests for common/cpustat.c on recorded /proc samples, and one live read.
 */
#include <errno.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "clock.h"
#include "cpustat.h"

static const char stat_a[] = "cpu  1000 10 500 8000 20 5 300 40 0 0\n"
			     "cpu0 600 5 300 3000 10 3 200 20 0 0\n"
			     "cpu1 400 5 200 5000 10 2 100 20 0 0\n"
			     "intr 12345 0 0\n"
			     "ctxt 999\n";
static const char stat_b[] = "cpu  1400 10 900 8100 20 5 500 40 0 0\n"
			     "cpu0 900 5 500 3000 10 3 300 20 0 0\n"
			     "cpu1 500 5 400 5100 10 2 200 20 0 0\n";

static void test_parse(void)
{
	struct cpustat_cpu a[4], b[4];
	struct cpustat_util u;

	CHECK_INT(cpustat_parse(stat_a, sizeof(stat_a) - 1, a, 4), 2);
	CHECK_INT(cpustat_parse(stat_b, sizeof(stat_b) - 1, b, 4), 2);
	CHECK_INT(a[1].cpu, 1);
	CHECK_U64(a[0].ticks[CPUSTAT_SOFTIRQ], 200);
	CHECK_U64(a[1].ticks[CPUSTAT_STEAL], 20);

	/* cpu0 spent 300 user + 200 system + 100 softirq ticks of 600: 100% busy. */
	CHECK_INT(cpustat_util(&a[0], &b[0], &u), 0);
	CHECK(u.busy > 99.999 && u.busy < 100.001);
	CHECK(u.pct[CPUSTAT_USER] > 49.99 && u.pct[CPUSTAT_USER] < 50.01);
	CHECK(u.pct[CPUSTAT_SOFTIRQ] > 16.66 && u.pct[CPUSTAT_SOFTIRQ] < 16.67);
	/* cpu1: 100 user, 200 sys, 100 softirq, 100 idle of 500: 80% busy. */
	CHECK_INT(cpustat_util(&a[1], &b[1], &u), 0);
	CHECK(u.busy > 79.99 && u.busy < 80.01);
	CHECK(u.pct[CPUSTAT_IDLE] > 19.99 && u.pct[CPUSTAT_IDLE] < 20.01);

	CHECK_INT(cpustat_util(&a[0], &b[1], &u), -EINVAL);
	CHECK_INT(cpustat_util(&b[0], &a[0], &u), -EINVAL);
	CHECK_INT(cpustat_util(&a[0], &a[0], &u), 0);
	CHECK(u.busy == 0);

	CHECK_INT(cpustat_parse(stat_a, sizeof(stat_a) - 1, a, 1), -ENOSPC);
	CHECK_INT(cpustat_parse("intr 1\n", 7, a, 4), -EINVAL);
	CHECK_INT(cpustat_parse("cpu0 1 2 x\n", 11, a, 4), -EINVAL);
	/* An old kernel without steal: the missing columns read as zero. */
	CHECK_INT(cpustat_parse("cpu0 1 2 3 4 5 6 7\n", 19, a, 4), 1);
	CHECK_U64(a[0].ticks[CPUSTAT_STEAL], 0);
	CHECK_STR(cpustat_field_name(CPUSTAT_SOFTIRQ), "softirq");
}

static void test_task_parse(void)
{
	/* A thread named ") evil (" with spaces: fields count from the last ')'. */
	static const char line[] =
		"4242 () evil () S 1 4242 4242 0 -1 4194560 100 0 0 0 77 33 0 0 20 0 3 0 "
		"12345 1000000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 5 0 0 0 0 0\n";
	struct cpustat_task t;

	CHECK_INT(cpustat_task_parse(line, sizeof(line) - 1, &t), 0);
	CHECK_STR(t.comm, ") evil (");
	CHECK_U64(t.utime, 77);
	CHECK_U64(t.stime, 33);
	CHECK_INT(t.processor, 5);
	CHECK_INT(cpustat_task_parse("1 (x) S 1 2", 11, &t), -EINVAL);
	CHECK_INT(cpustat_task_parse("garbage", 7, &t), -EINVAL);
}

static void test_live(void)
{
	struct cpustat_cpu cpus[1024];
	struct cpustat_task t;
	uint64_t before = clock_thread_cpu_ns(), t0 = clock_mono_ns();
	volatile uint64_t spin = 0;
	long online = sysconf(_SC_NPROCESSORS_ONLN);

	CHECK(cpustat_read(cpus, 1024) >= online);
	while (clock_mono_ns() - t0 < 30 * NSEC_PER_MSEC)
		spin++;
	CHECK(clock_thread_cpu_ns() - before >= 10 * NSEC_PER_MSEC);
	CHECK_INT(cpustat_task_read(getpid(), (pid_t)syscall(SYS_gettid), &t), 0);
	CHECK(t.processor >= 0 && t.processor < 1024);
	CHECK_INT(cpustat_task_read(getpid(), 0x7ffffff0, &t), -ENOENT);
	CHECK(cpustat_ticks_per_sec() > 0);
}

int main(void)
{
	test_parse();
	test_task_parse();
	test_live();
	return check_done("test_cpustat");
}
