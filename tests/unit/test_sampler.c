/*
 * Unit tests for sample/sampler.c: which processes it watches, and what one sample holds for
 * this process (its own threads, with their CPU and processor) and for one that has ended.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "cpustat.h"
#include "sampler.h"

static void test_watch(void)
{
	static struct sampler s;

	printf("case: watch\n");
	CHECK_INT(sampler_watch(&s, 0), -EINVAL);
	CHECK_INT(sampler_watch(&s, -5), -EINVAL);
	CHECK_INT(sampler_watch(&s, 42), 0);
	CHECK_INT(sampler_watch(&s, 42), 0);
	CHECK_INT(s.npids, 1);
	for (pid_t p = 100; s.npids < SAMPLER_PIDS; p++)
		CHECK_INT(sampler_watch(&s, p), 0);
	CHECK_INT(sampler_watch(&s, 1), -ENOSPC);
	CHECK_INT(sampler_watch(&s, 42), 0); /* watched already: not a new one */
}

static void *idle_thread(void *arg)
{
	pause();
	return arg;
}

static void test_take_self(void)
{
	static struct sampler s;
	struct cpustat_cpu cpus[SAMPLER_CPUS];
	pthread_t t;
	char tid[24], self[24];
	json_t *doc, *threads, *row;

	printf("case: a sample of this process, two threads\n");
	CHECK_INT(pthread_create(&t, NULL, idle_thread, NULL), 0);
	CHECK_INT(sampler_watch(&s, getpid()), 0);
	doc = sampler_take(&s);
	CHECK(doc != NULL);
	if (!doc)
		return;
	CHECK(json_real_value(json_object_get(doc, "t")) > 0);
	CHECK_INT(json_object_size(json_object_get(doc, "cpus")), cpustat_read(cpus, SAMPLER_CPUS));
	CHECK(json_is_integer(
		json_object_get(json_object_get(json_object_get(doc, "cpus"), "0"), "softirq")));
	threads = json_object_get(doc, "threads");
	CHECK_INT(json_object_size(threads), 2);
	snprintf(self, sizeof(self), "%ld", (long)syscall(SYS_gettid));
	row = json_object_get(threads, self);
	CHECK(json_is_array(row) && json_array_size(row) == 4);
	CHECK_INT(json_integer_value(json_array_get(row, 0)), getpid());
	CHECK_STR(json_string_value(json_array_get(row, 1)) ?: "", "test_sampler");
	CHECK(json_is_number(json_array_get(row, 2)) &&
	      json_number_value(json_array_get(row, 2)) >= 0);
	CHECK(json_integer_value(json_array_get(row, 3)) >= 0);
	snprintf(tid, sizeof(tid), "%d", getpid());
	CHECK(json_object_get(threads, tid) != NULL);
	json_decref(doc);
	pthread_cancel(t);
	pthread_join(t, NULL);
}

static void test_take_gone(void)
{
	static struct sampler s;
	json_t *doc;
	pid_t child = fork();

	printf("case: a process that has ended is left out\n");
	if (child == 0)
		_exit(0);
	CHECK(child > 0);
	waitpid(child, NULL, 0);
	CHECK_INT(sampler_watch(&s, child), 0);
	doc = sampler_take(&s);
	CHECK(doc != NULL);
	CHECK_INT(json_object_size(json_object_get(doc, "threads")), 0);
	json_decref(doc);
}

int main(void)
{
	test_watch();
	test_take_self();
	test_take_gone();
	return check_done("test_sampler");
}
