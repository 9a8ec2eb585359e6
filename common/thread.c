/*
 * Pinned threads and the CPUs they are planned on (see thread.h).
 */
#include "thread.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <sys/sysinfo.h>

#include "log.h"
#include "parse.h"

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

int thread_cpu_unusable(const cpu_set_t *set, cpu_set_t *usable)
{
	cpu_set_t own;

	if (sched_getaffinity(0, sizeof(own), &own) < 0)
		return -1;
	if (usable)
		*usable = own;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (CPU_ISSET(cpu, set) && !CPU_ISSET(cpu, &own))
			return cpu;
	}
	return -1;
}

int thread_cpus_check(const char *what, const char *val, const cpu_set_t *set)
{
	char list[256];
	cpu_set_t own;
	int cpu = thread_cpu_unusable(set, &own);

	if (cpu < 0)
		return 0;
	if (format_cpulist(&own, list, sizeof(list)) < 0)
		snprintf(list, sizeof(list), "%d of them", CPU_COUNT(&own));
	if (cpu >= get_nprocs_conf())
		log_warnx("%s %s: no CPU %d on this machine (CPUs %s)", what, val, cpu, list);
	else
		log_warnx("%s %s: CPU %d is not one this process may use (CPUs %s)", what, val, cpu,
			  list);
	return -EINVAL;
}
