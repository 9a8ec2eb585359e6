/*
 * Pinned threads and the CPUs they are planned on (see thread.h).
 */
#include "thread.h"

#include <sched.h>

int thread_start(pthread_t *t, int cpu, void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	int rc;

	pthread_attr_init(&attr);
	if (cpu >= 0) {
		cpu_set_t one;

		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		pthread_attr_setaffinity_np(&attr, sizeof(one), &one);
	}
	rc = pthread_create(t, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	return -rc;
}

int thread_cpu_list(const cpu_set_t *set, int *cpus, int max)
{
	cpu_set_t own;
	int n = 0;

	if (!set) {
		if (sched_getaffinity(0, sizeof(own), &own) < 0)
			CPU_ZERO(&own);
		set = &own;
	}
	for (int cpu = 0; cpu < CPU_SETSIZE && n < max; cpu++) {
		if (CPU_ISSET(cpu, set))
			cpus[n++] = cpu;
	}
	return n;
}

int thread_cpu_pick(const int *cpus, int n, unsigned i)
{
	return n > 0 ? cpus[i % (unsigned)n] : -1;
}
