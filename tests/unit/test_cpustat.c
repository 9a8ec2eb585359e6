/*
 * Unit tests for common/cpustat.c on recorded /proc samples, and live reads: this thread's
 * CPU time in ticks against its CPU clock.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <time.h>
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

static void test_schedstat_parse(void)
{
	uint64_t ns = 0;

	CHECK_INT(cpustat_schedstat_parse("123456789012 5678 90\n", 21, &ns), 0);
	CHECK_U64(ns, 123456789012ull);
	CHECK_INT(cpustat_schedstat_parse("0 0 0\n", 6, &ns), 0);
	CHECK_U64(ns, 0);
	CHECK_INT(cpustat_schedstat_parse("", 0, &ns), -EINVAL);
	CHECK_INT(cpustat_schedstat_parse("x 1 2\n", 6, &ns), -EINVAL);
	CHECK_INT(cpustat_schedstat_parse("12x 1\n", 6, &ns), -EINVAL);
	CHECK_INT(cpustat_schedstat_parse("99999999999999999999999 1\n", 26, &ns), -EINVAL);
}

/* The clocks read directly, independently of common/clock.c and of the module under test. */
static uint64_t read_ns(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/*
 * This thread's CPU time as cpustat_task_read has it (utime + stime, in ticks) against its
 * CPU clock, true however loaded the machine: spin until the clock has advanced SPIN_MS
 * (whatever that takes in wall time; 30 s at most), then the ticks must have advanced by as
 * much, give or take what the kernel's accounting loses or lags: utime and stime are each
 * rounded down to a tick, and the runtime they are scaled to may trail the CPU clock by one
 * scheduler tick (1/HZ, never more than a USER_HZ tick: HZ >= 100).
 */
static void test_live_task_time(void)
{
	enum { SPIN_MS = 200 };
	const uint64_t spin_ns = SPIN_MS * NSEC_PER_MSEC;
	uint64_t tick = NSEC_PER_SEC / (uint64_t)cpustat_ticks_per_sec();
	uint64_t slack = 3 * tick + NSEC_PER_MSEC, c0, c1, w0, w1, spun, ticks_ns;
	pid_t tid = (pid_t)syscall(SYS_gettid);
	struct cpustat_task t0, t1;
	volatile uint64_t spin = 0;
	bool have;

	/* Each of the module's readings just before a clock reading, as the bounds above assume. */
	w0 = read_ns(CLOCK_MONOTONIC);
	CHECK_INT(cpustat_task_read(getpid(), tid, &t0), 0);
	CHECK(t0.runtime_ns == 0); /* the stat file alone: gregw's telemetry reads no more */
	have = cpustat_task_runtime(getpid(), tid, &t0) == 0;
	c0 = read_ns(CLOCK_THREAD_CPUTIME_ID);
	while (read_ns(CLOCK_THREAD_CPUTIME_ID) - c0 < spin_ns &&
	       read_ns(CLOCK_MONOTONIC) - w0 < 30ull * NSEC_PER_SEC)
		spin++;
	CHECK_INT(cpustat_task_read(getpid(), tid, &t1), 0);
	CHECK(have == (cpustat_task_runtime(getpid(), tid, &t1) == 0));
	c1 = read_ns(CLOCK_THREAD_CPUTIME_ID);
	w1 = read_ns(CLOCK_MONOTONIC);
	spun = c1 - c0;
	CHECK(spun >= spin_ns); /* the spin ended on CPU time, not on the 30 s bound */
	CHECK(spun <= w1 - w0); /* one thread gets no more CPU time than wall time passes */
	ticks_ns = (t1.utime + t1.stime - t0.utime - t0.stime) * tick;
	CHECK(ticks_ns + slack >= spin_ns);
	CHECK(ticks_ns <= spun + slack);
	/* schedstat's runtime, where this kernel has it (then it must have been read): no
	 * rounding to ticks; it may trail the CPU clock by one scheduler tick at each end. */
	CHECK(access("/proc/self/schedstat", R_OK) < 0 || (have && t0.runtime_ns && t1.runtime_ns));
	if (t0.runtime_ns && t1.runtime_ns) {
		uint64_t run = t1.runtime_ns - t0.runtime_ns;

		CHECK(run + tick >= spin_ns);
		CHECK(run <= spun + tick);
		CHECK(cpustat_task_ticks(&t1, cpustat_ticks_per_sec()) >
		      cpustat_task_ticks(&t0, cpustat_ticks_per_sec()));
	}
	if (ticks_ns + slack < spin_ns || ticks_ns > spun + slack)
		fprintf(stderr,
			"thread CPU clock %" PRIu64 " ns, cpustat %" PRIu64 " ns (%" PRIu64
			" ticks), slack %" PRIu64 " ns\n",
			spun, ticks_ns, ticks_ns / tick, slack);
}

static void test_live(void)
{
	struct cpustat_cpu cpus[1024];
	struct cpustat_task t;
	long online = sysconf(_SC_NPROCESSORS_ONLN);

	CHECK(cpustat_read(cpus, 1024) >= online);
	CHECK_INT(cpustat_task_read(getpid(), (pid_t)syscall(SYS_gettid), &t), 0);
	CHECK(t.processor >= 0 && t.processor < 1024);
	CHECK_INT(cpustat_task_read(getpid(), 0x7ffffff0, &t), -ENOENT);
	CHECK_INT(cpustat_task_runtime(getpid(), 0x7ffffff0, &t), -ENOENT);
	CHECK(t.runtime_ns == 0);
	CHECK(cpustat_ticks_per_sec() > 0);
	test_live_task_time();
}

int main(void)
{
	test_parse();
	test_task_parse();
	test_schedstat_parse();
	test_live();
	return check_done("test_cpustat");
}
