/*
 * CPU samples from /proc (see sampler.h; proc(5)), through common/cpustat.
 */
#include "sampler.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "cpustat.h"
#include "jout.h"

int sampler_watch(struct sampler *s, pid_t pid)
{
	if (pid < 1)
		return -EINVAL;
	for (unsigned i = 0; i < s->npids; i++)
		if (s->pids[i] == pid)
			return 0;
	if (s->npids == SAMPLER_PIDS)
		return -ENOSPC;
	s->pids[s->npids++] = pid;
	return 0;
}

static json_t *cpus_json(void)
{
	static struct cpustat_cpu cpu[SAMPLER_CPUS];
	json_t *o = json_object();
	int n = cpustat_read(cpu, SAMPLER_CPUS);

	if (n < 0 || !o) {
		json_decref(o);
		errno = n < 0 ? -n : ENOMEM;
		return NULL;
	}
	for (int i = 0; i < n; i++) {
		json_t *c = json_object();
		char name[16];

		for (int f = 0; c && f < CPUSTAT_NFIELDS; f++)
			jout_u64(c, cpustat_field_name(f), cpu[i].ticks[f]);
		snprintf(name, sizeof(name), "%d", cpu[i].cpu);
		jout_set(o, name, c);
	}
	return o;
}

/* Every thread of pid into threads; a process or thread gone meanwhile is left out. */
static void threads_of(pid_t pid, json_t *threads)
{
	char path[64];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d))) {
		struct cpustat_task t;
		char *end;
		long tid = strtol(de->d_name, &end, 10);
		json_t *row;

		if (*end || tid < 1 || cpustat_task_read(pid, (pid_t)tid, &t) < 0)
			continue;
		/* Nanoseconds where the kernel keeps them: a small budget over a short window is
		 * a few 10-ms ticks (without, the ticks of stat). */
		(void)cpustat_task_runtime(pid, (pid_t)tid, &t);
		row = json_pack("[i,s,f,i]", (int)pid, t.comm,
				cpustat_task_ticks(&t, cpustat_ticks_per_sec()), t.processor);
		jout_set(threads, de->d_name, row);
	}
	closedir(d);
}

json_t *sampler_take(const struct sampler *s)
{
	uint64_t now = clock_mono_ns();
	json_t *doc = json_object(), *threads = json_object(), *cpus = cpus_json();

	if (!doc || !threads || !cpus) {
		int err = cpus ? ENOMEM : errno;

		json_decref(doc);
		json_decref(threads);
		json_decref(cpus);
		errno = err;
		return NULL;
	}
	for (unsigned i = 0; i < s->npids; i++)
		threads_of(s->pids[i], threads);
	jout_real(doc, "t", (double)now / NSEC_PER_SEC);
	jout_set(doc, "cpus", cpus);
	jout_set(doc, "threads", threads);
	return doc;
}

json_t *sampler_header(unsigned hz)
{
	json_t *doc = json_object();

	if (!doc)
		return NULL;
	jout_str(doc, "sampler", "tunbed-sample");
	jout_int(doc, "hz", hz);
	jout_int(doc, "ticks_per_second", cpustat_ticks_per_sec());
	jout_str(doc, "clock", "CLOCK_MONOTONIC");
	return doc;
}
