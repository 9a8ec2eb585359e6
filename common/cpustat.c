/*
 * CPU accounting from /proc/stat and /proc/PID/task/TID/stat (see cpustat.h).
 */
#include "cpustat.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const field_names[CPUSTAT_NFIELDS] = {
	[CPUSTAT_USER] = "user",       [CPUSTAT_NICE] = "nice",	    [CPUSTAT_SYSTEM] = "system",
	[CPUSTAT_IDLE] = "idle",       [CPUSTAT_IOWAIT] = "iowait", [CPUSTAT_IRQ] = "irq",
	[CPUSTAT_SOFTIRQ] = "softirq", [CPUSTAT_STEAL] = "steal",
};

const char *cpustat_field_name(enum cpustat_field f)
{
	return f < CPUSTAT_NFIELDS ? field_names[f] : "?";
}

/* Reads a whole small /proc file into buf (NUL-terminated). Returns its length or -errno. */
static ssize_t read_small_file(const char *path, char *buf, size_t size)
{
	size_t used = 0;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (used + 1 < size) {
		n = read(fd, buf + used, size - 1 - used);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			n = -errno;
			close(fd);
			return n;
		}
		if (n == 0)
			break;
		used += (size_t)n;
	}
	close(fd);
	buf[used] = '\0';
	return (ssize_t)used;
}

/* Parses one line "cpuN f0 f1 ..." (NUL-terminated, no newline). */
static int parse_cpu_line(const char *line, struct cpustat_cpu *out)
{
	char *end;
	const char *p = line + 3;
	unsigned long cpu;

	errno = 0;
	cpu = strtoul(p, &end, 10);
	if (end == p || *end != ' ' || errno || cpu > 1u << 20)
		return -EINVAL;
	out->cpu = (int)cpu;
	p = end;
	for (int f = 0; f < CPUSTAT_NFIELDS; f++) {
		/* Kernels before 2.6.11 have no steal column: absent fields count as zero. */
		while (*p == ' ')
			p++;
		if (*p == '\0') {
			out->ticks[f] = 0;
			continue;
		}
		errno = 0;
		out->ticks[f] = strtoull(p, &end, 10);
		if (end == p || errno || (*end != ' ' && *end != '\0'))
			return -EINVAL;
		p = end;
	}
	return 0;
}

int cpustat_parse(const char *text, size_t len, struct cpustat_cpu *out, int max)
{
	const char *p = text, *stop = text + len;
	char line[512];
	int n = 0;

	while (p < stop) {
		const char *nl = memchr(p, '\n', (size_t)(stop - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(stop - p);

		if (l >= 4 && memcmp(p, "cpu", 3) == 0 && p[3] >= '0' && p[3] <= '9') {
			if (l >= sizeof(line))
				return -EINVAL;
			if (n >= max)
				return -ENOSPC;
			memcpy(line, p, l);
			line[l] = '\0';
			if (parse_cpu_line(line, &out[n]))
				return -EINVAL;
			n++;
		}
		p += l + 1;
	}
	return n ? n : -EINVAL;
}

int cpustat_read(struct cpustat_cpu *out, int max)
{
	/* /proc/stat grows with CPUs and interrupts; 1 MiB covers thousands of CPUs. */
	static __thread char *buf;
	enum { BUF_SIZE = 1 << 20 };
	ssize_t n;

	if (!buf) {
		buf = malloc(BUF_SIZE);
		if (!buf)
			return -ENOMEM;
	}
	n = read_small_file("/proc/stat", buf, BUF_SIZE);
	if (n < 0)
		return (int)n;
	return cpustat_parse(buf, (size_t)n, out, max);
}

int cpustat_util(const struct cpustat_cpu *a, const struct cpustat_cpu *b, struct cpustat_util *out)
{
	uint64_t d[CPUSTAT_NFIELDS], total = 0;

	memset(out, 0, sizeof(*out));
	if (a->cpu != b->cpu)
		return -EINVAL;
	for (int f = 0; f < CPUSTAT_NFIELDS; f++) {
		if (b->ticks[f] < a->ticks[f])
			return -EINVAL;
		d[f] = b->ticks[f] - a->ticks[f];
		total += d[f];
	}
	if (total == 0)
		return 0;
	for (int f = 0; f < CPUSTAT_NFIELDS; f++)
		out->pct[f] = 100.0 * (double)d[f] / (double)total;
	out->busy = 100.0 * (double)(total - d[CPUSTAT_IDLE] - d[CPUSTAT_IOWAIT]) / (double)total;
	return 0;
}

int cpustat_task_parse(const char *text, size_t len, struct cpustat_task *out)
{
	const char *open, *close = NULL, *p;
	char rest[1024], *save = NULL, *tok;
	size_t n;
	int field;

	memset(out, 0, sizeof(*out));
	open = memchr(text, '(', len);
	if (!open)
		return -EINVAL;
	/* A thread may name itself ") x (": the real end of comm is the last ')'. */
	for (p = open; p < text + len; p++) {
		if (*p == ')')
			close = p;
	}
	if (!close)
		return -EINVAL;
	n = (size_t)(close - open - 1);
	if (n >= sizeof(out->comm))
		n = sizeof(out->comm) - 1;
	memcpy(out->comm, open + 1, n);
	out->comm[n] = '\0';

	n = (size_t)(text + len - close - 1);
	if (n >= sizeof(rest))
		n = sizeof(rest) - 1;
	memcpy(rest, close + 1, n);
	rest[n] = '\0';
	/* Fields after comm start at 3 (state); utime is 14, stime 15, processor 39. */
	field = 3;
	for (tok = strtok_r(rest, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save), field++) {
		char *end;
		unsigned long long v;

		if (field != 14 && field != 15 && field != 39)
			continue;
		errno = 0;
		v = strtoull(tok, &end, 10);
		if (*end || errno)
			return -EINVAL;
		if (field == 14)
			out->utime = v;
		else if (field == 15)
			out->stime = v;
		else
			out->processor = (int)v;
	}
	return field > 39 ? 0 : -EINVAL;
}

int cpustat_task_read(pid_t pid, pid_t tid, struct cpustat_task *out)
{
	char path[64], buf[1024];
	ssize_t n;
	int rc;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	n = read_small_file(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	rc = cpustat_task_parse(buf, (size_t)n, out);
	out->runtime_ns = 0;
	return rc < 0 ? rc : 0;
}

int cpustat_task_runtime(pid_t pid, pid_t tid, struct cpustat_task *out)
{
	char path[64], buf[64];
	ssize_t n;

	out->runtime_ns = 0;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
	n = read_small_file(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	if (cpustat_schedstat_parse(buf, (size_t)n, &out->runtime_ns) < 0) {
		out->runtime_ns = 0;
		return -EINVAL;
	}
	return 0;
}

int cpustat_schedstat_parse(const char *text, size_t len, uint64_t *ns)
{
	char buf[32], *end;
	unsigned long long v;
	size_t n = 0;

	while (n < len && n < sizeof(buf) - 1 && text[n] >= '0' && text[n] <= '9') {
		buf[n] = text[n];
		n++;
	}
	if (!n || n == sizeof(buf) - 1 || (n < len && text[n] != ' ' && text[n] != '\n'))
		return -EINVAL;
	buf[n] = '\0';
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*ns = v;
	return 0;
}

double cpustat_task_ticks(const struct cpustat_task *t, long ticks_per_sec)
{
	if (t->runtime_ns)
		return (double)t->runtime_ns * (double)ticks_per_sec / 1e9;
	return (double)(t->utime + t->stime);
}

long cpustat_ticks_per_sec(void)
{
	long hz = sysconf(_SC_CLK_TCK);

	return hz > 0 ? hz : 100;
}
