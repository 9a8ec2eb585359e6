/*
 * Starting threads pinned to a CPU, as the gateway's workers and the traffic tool's threads
 * are. Main thread, before the packet path runs.
 */
#ifndef TUNBED_THREAD_H
#define TUNBED_THREAD_H

#include <pthread.h>

/*
 * Starts fn(arg) on a new thread, pinned to cpu unless cpu is negative. Returns 0 or -errno
 * (of pthread_create; a CPU the process may not use fails here, not later).
 */
int thread_start(pthread_t *t, int cpu, void *(*fn)(void *), void *arg);

#endif
