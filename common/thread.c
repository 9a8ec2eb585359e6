/*
 * Pinned threads (see thread.h).
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
