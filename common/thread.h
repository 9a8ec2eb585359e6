/*
 * Starting threads pinned to a CPU, as the gateway's workers and the traffic tool's threads
 * are, planning which CPU each thread gets, and checking a CPU list against the CPUs there
 * are. Main thread, before the packet path runs.
 */
#ifndef TUNBED_THREAD_H
#define TUNBED_THREAD_H

#include <pthread.h>
#include <sched.h>

/*
 * Starts fn(arg) on a new thread, pinned to cpu unless cpu is negative. Returns 0 or -errno
 * (of pthread_create; a CPU the process may not use fails here, not later).
 */
int thread_start(pthread_t *t, int cpu, void *(*fn)(void *), void *arg);

/*
 * The CPUs of set in ascending order or, when set is NULL, those this process may run on
 * (sched_getaffinity). Writes at most max of them into cpus and returns how many it wrote: 0
 * when there are none or the affinity cannot be read. Any thread.
 */
int thread_cpu_list(const cpu_set_t *set, int *cpus, int max);

/*
 * The CPU of thread i when threads take the n CPUs of cpus in turn: the i-th CPU for thread
 * i, wrapping around the list when there are more threads than CPUs (cpus[i % n]); -1 (not
 * pinned) when n is 0 or less. Pure.
 */
int thread_cpu_pick(const int *cpus, int n, unsigned i);

/*
 * The lowest CPU of set that this process may not run on (one the machine lacks, or one
 * outside the process's affinity: a cpuset, taskset), on which thread_start would fail with
 * EINVAL; -1 when it may run on every CPU of set, or when its affinity cannot be read (then
 * thread_start finds out). *usable, unless NULL, gets that affinity. Any thread.
 */
int thread_cpu_unusable(const cpu_set_t *set, cpu_set_t *usable);

/*
 * thread_cpu_unusable for a CPU list a user gave as val for what (an option, a key): returns
 * 0 when every CPU of set is usable; otherwise logs one line and returns -EINVAL, naming the
 * lowest CPU at fault and the CPUs this process may use:
 *   "WHAT VAL: no CPU N on this machine (CPUs LIST)"  (N at or above the CPUs configured)
 *   "WHAT VAL: CPU N is not one this process may use (CPUs LIST)"  (outside its affinity)
 * Main thread, before the threads start.
 */
int thread_cpus_check(const char *what, const char *val, const cpu_set_t *set);

#endif
