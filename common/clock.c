/*
 * Clocks (see clock.h).
 */
#include "clock.h"

#include <errno.h>

static uint64_t read_clock(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return clock_ns_from_ts(&ts);
}

uint64_t clock_mono_ns(void)
{
	return read_clock(CLOCK_MONOTONIC);
}

uint64_t clock_real_ns(void)
{
	return read_clock(CLOCK_REALTIME);
}

uint64_t clock_thread_cpu_ns(void)
{
	return read_clock(CLOCK_THREAD_CPUTIME_ID);
}

int clock_sleep_ns(uint64_t ns)
{
	struct timespec ts = clock_ts_from_ns(ns);
	int rc;

	do {
		rc = clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts);
	} while (rc == EINTR);
	return -rc;
}

double clock_secs(uint64_t ns)
{
	return (double)ns / NSEC_PER_SEC;
}

struct timespec clock_ts_from_ns(uint64_t ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(ns / NSEC_PER_SEC),
		.tv_nsec = (long)(ns % NSEC_PER_SEC),
	};

	return ts;
}

uint64_t clock_ns_from_ts(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * NSEC_PER_SEC + (uint64_t)ts->tv_nsec;
}
