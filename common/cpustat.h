/*
 * CPU accounting shared by gregw (its workers' CPU time in the stats) and tunbed-sample (the
 * runner's sampler): per-CPU time from /proc/stat (user, system, softirq, steal, idle, ...)
 * and per-thread CPU time and last CPU from /proc/PID/task/TID/stat. Times are in clock ticks (USER_HZ) as the kernel exports them;
 * a thread's is also read in nanoseconds from /proc/PID/task/TID/schedstat where the kernel
 * has it (CONFIG_SCHED_INFO), as a 10-ms tick is a tenth of a 5% budget over 2 s.
 */
#ifndef TUNBED_CPUSTAT_H
#define TUNBED_CPUSTAT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum cpustat_field {
	CPUSTAT_USER,
	CPUSTAT_NICE,
	CPUSTAT_SYSTEM,
	CPUSTAT_IDLE,
	CPUSTAT_IOWAIT,
	CPUSTAT_IRQ,
	CPUSTAT_SOFTIRQ,
	CPUSTAT_STEAL,
	CPUSTAT_NFIELDS,
};

/* One "cpuN" line of /proc/stat. guest and guest_nice are already inside user and nice. */
struct cpustat_cpu {
	int cpu;
	uint64_t ticks[CPUSTAT_NFIELDS];
};

/* Share of an interval, in percent (0..100), per field, and busy = 100 - idle - iowait. */
struct cpustat_util {
	double pct[CPUSTAT_NFIELDS];
	double busy;
};

/* One thread, from /proc/PID/task/TID/stat. */
struct cpustat_task {
	char comm[16];
	uint64_t utime;	     /* ticks */
	uint64_t stime;	     /* ticks */
	int processor;	     /* CPU it last ran on */
	uint64_t runtime_ns; /* its CPU time (schedstat's sum_exec_runtime); 0: not read */
};

/* "user", "nice", "system", ... for a field. */
const char *cpustat_field_name(enum cpustat_field f);

/*
 * Parses the per-CPU lines of a /proc/stat text into out[0..max). The aggregate "cpu" line is
 * skipped. Pure. Returns the number of CPUs, -EINVAL (malformed) or -ENOSPC (more than max).
 */
int cpustat_parse(const char *text, size_t len, struct cpustat_cpu *out, int max);

/* Reads /proc/stat and parses it as cpustat_parse. Any thread. Adds -errno of the read. */
int cpustat_read(struct cpustat_cpu *out, int max);

/*
 * Utilisation of one CPU between two samples a (earlier) and b. Returns 0, or -EINVAL if the
 * samples are of different CPUs or a counter went backwards (a CPU went offline and back).
 */
int cpustat_util(const struct cpustat_cpu *a, const struct cpustat_cpu *b,
		 struct cpustat_util *out);

/* Parses one /proc/PID/task/TID/stat text (comm may hold spaces and parentheses). Pure. */
int cpustat_task_parse(const char *text, size_t len, struct cpustat_task *out);

/* Parses the first field of a /proc/PID/task/TID/schedstat text (time on a CPU, ns). Pure.
 * Returns 0 or -EINVAL. */
int cpustat_schedstat_parse(const char *text, size_t len, uint64_t *ns);

/* Reads /proc/PID/task/TID/stat (runtime_ns left 0). Returns 0 or -errno (-ENOENT once the
 * thread is gone). */
int cpustat_task_read(pid_t pid, pid_t tid, struct cpustat_task *out);

/* Reads /proc/PID/task/TID/schedstat into out->runtime_ns (left 0 when it cannot be read: a
 * kernel without schedstat, or the thread gone). Returns 0 or -errno. A second file read per
 * thread: tunbed-sample's, whose budgets need nanoseconds; gregw's telemetry has no use. */
int cpustat_task_runtime(pid_t pid, pid_t tid, struct cpustat_task *out);

/* A thread's CPU time in ticks of ticks_per_sec: from runtime_ns where it was read (a
 * fraction of a tick kept), else utime + stime. */
double cpustat_task_ticks(const struct cpustat_task *t, long ticks_per_sec);

/* Clock ticks per second (USER_HZ). */
long cpustat_ticks_per_sec(void);

#endif
