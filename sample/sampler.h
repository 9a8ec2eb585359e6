/*
 * The CPU sampler of tunbed-sample: one sample is every CPU's times from /proc/stat and every
 * thread of the watched processes (CPU time and the CPU it last ran on) from
 * /proc/PID/task/TID/stat, as one JSON document, stamped on CLOCK_MONOTONIC.
 */
#ifndef TUNBED_SAMPLE_SAMPLER_H
#define TUNBED_SAMPLE_SAMPLER_H

#include <jansson.h>
#include <stdint.h>
#include <sys/types.h>

enum sampler_limits {
	SAMPLER_PIDS = 256,  /* processes watched at once: a run's gateways, generators, capture */
	SAMPLER_CPUS = 1024, /* CPUs read from /proc/stat (the kernel's NR_CPUS of common builds) */
	SAMPLER_HZ_MAX = 100,  /* samples a second at most: /proc/stat moves in 10 ms ticks */
	SAMPLER_LINE_MAX = 64, /* a stdin line and its newline: "watch 2147483647" is 17 */
};

struct sampler {
	pid_t pids[SAMPLER_PIDS];
	unsigned npids;
};

/* Watches pid from the next sample on. Returns 0 (also when already watched), -EINVAL for a
 * pid below 1, or -ENOSPC when SAMPLER_PIDS are watched. */
int sampler_watch(struct sampler *s, pid_t pid);

/*
 * One sample taken now: {"t": seconds on CLOCK_MONOTONIC, "cpus": {"N": {"user": ticks, ...}},
 * "threads": {"TID": [pid, comm, utime + stime ticks, processor]}}. A watched process or
 * thread that has ended is left out. Returns a new document, or NULL (the errno of reading
 * /proc/stat, or ENOMEM).
 */
json_t *sampler_take(const struct sampler *s);

/* The first line of a run: {"sampler": "tunbed-sample", "hz", "ticks_per_second", "clock"}. */
json_t *sampler_header(unsigned hz);

#endif
