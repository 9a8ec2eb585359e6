/*
 * Clocks: monotonic time in nanoseconds, the clock every tunbed interval and sample uses, and
 * conversions to and from struct timespec.
 */
#ifndef TUNBED_CLOCK_H
#define TUNBED_CLOCK_H

#include <stdint.h>
#include <time.h>

enum {
	NSEC_PER_USEC = 1000,
	NSEC_PER_MSEC = 1000000,
	NSEC_PER_SEC = 1000000000,
};

/* CLOCK_MONOTONIC in ns. Any thread; never fails on Linux. */
uint64_t clock_mono_ns(void);

/* CLOCK_REALTIME in ns, for timestamps meant for people. Any thread. */
uint64_t clock_real_ns(void);

/* CPU time consumed by the calling thread, in ns. Any thread. */
uint64_t clock_thread_cpu_ns(void);

/* Sleeps for ns nanoseconds, resuming after signals. Returns 0 or -errno (-EINVAL). */
int clock_sleep_ns(uint64_t ns);

/* ns as seconds, for reports and JSON. Pure. */
double clock_secs(uint64_t ns);

struct timespec clock_ts_from_ns(uint64_t ns);
uint64_t clock_ns_from_ts(const struct timespec *ts);

#endif
