/*
 * tunbed-sample: samples CPU time while a run measures (docs/runner.md). Writes one JSON line
 * of header, then one sample at once and one every 1/hz seconds, and a last one when told to
 * stop: a line "stop" on stdin, the end of stdin, SIGINT or SIGTERM. A line "watch PID" adds a
 * process. The runner starts it on every host whose CPU it reports.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "clock.h"
#include "jout.h"
#include "log.h"
#include "parse.h"
#include "sampler.h"
#include "sigfd.h"

enum { EXIT_USAGE = 2, DEFAULT_HZ = 4 };

/* What stdin has brought of the line being read. */
struct cmdin {
	char buf[SAMPLER_LINE_MAX];
	size_t used;
	bool too_long; /* the line outgrew buf: the rest of it, up to its newline, is dropped */
};

static void usage(void)
{
	printf("usage: tunbed-sample [--hz N] [--pid PID]...\n"
	       "\n"
	       "Samples every CPU's times (/proc/stat) and every thread of the watched processes\n"
	       "(/proc/PID/task/TID/stat: CPU time and the CPU it last ran on) and writes them as\n"
	       "JSON lines on stdout, stamped on CLOCK_MONOTONIC: a header line, a sample at "
	       "once,\n"
	       "one every 1/N seconds, and a last one at the stop.\n"
	       "\n"
	       "  --hz N      samples a second, 1 to %d (default %d)\n"
	       "  --pid PID   watch a process from the start (repeatable)\n"
	       "  -h, --help  this text\n"
	       "  --version   the version\n"
	       "\n"
	       "stdin: \"watch PID\" adds a process; \"now\" writes {\"now\": CLOCK_MONOTONIC} at\n"
	       "once (the runner aligns hosts' clocks by its round trip); \"stop\", or the end of\n"
	       "stdin, stops (so do SIGINT and SIGTERM). Any other line is named on stderr and\n"
	       "ignored, a line longer than %d bytes or with a NUL byte whole. Exit status: 0\n"
	       "after a stop, 1 when stdout or /proc fails, 2 for a bad option.\n",
	       SAMPLER_HZ_MAX, DEFAULT_HZ, SAMPLER_LINE_MAX - 1);
}

static int parse_args(int argc, char **argv, unsigned *hz, struct sampler *s)
{
	static const struct option opts[] = {
		{ "hz", required_argument, NULL, 'z' },
		{ "pid", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'z':
			if (parse_u64(optarg, 1, SAMPLER_HZ_MAX, &v)) {
				log_warnx("bad value '%s' for --hz: expected 1 to %d", optarg,
					  SAMPLER_HZ_MAX);
				return -EINVAL;
			}
			*hz = (unsigned)v;
			break;
		case 'p':
			if (parse_u64(optarg, 1, INT32_MAX, &v) || sampler_watch(s, (pid_t)v)) {
				log_warnx("bad value '%s' for --pid: expected a process id",
					  optarg);
				return -EINVAL;
			}
			break;
		case 'h':
			usage();
			return 1;
		case 'V':
			printf("tunbed-sample %s\n", TUNBED_VERSION);
			return 1;
		default:
			return -EINVAL;
		}
	}
	if (optind < argc) {
		log_warnx("unexpected argument '%s' (see --help)", argv[optind]);
		return -EINVAL;
	}
	return 0;
}

static int emit(json_t *doc)
{
	int rc = doc ? jout_dump(stdout, doc, 0) : -errno;

	json_decref(doc);
	if (rc)
		log_warnx("cannot write a sample: %s", strerror(-rc));
	return rc;
}

/* Makes a line that is ignored safe to name: a byte that is not printable ASCII becomes '?'. */
static const char *printable(char *line)
{
	for (char *p = line; *p; p++) {
		unsigned char c = (unsigned char)*p;

		if (c < 0x20 || c > 0x7e)
			*p = '?';
	}
	return line;
}

/* One command line from stdin, without its newline. Returns 1 to stop, 0 to go on. A bad
 * line is named and ignored: the sampler serves the run, not the other way round. */
static int command(struct sampler *s, char *line, size_t len)
{
	uint64_t pid;

	/* A NUL would end the line early for every comparison below: "stop\0..." is no stop. */
	if (memchr(line, 0, len)) {
		log_warnx("ignored a line with a NUL byte on stdin");
		return 0;
	}
	if (len && line[len - 1] == '\r')
		len--;
	line[len] = 0;
	if (strcmp(line, "stop") == 0)
		return 1;
	if (strcmp(line, "now") == 0) {
		/* At once, before anything else: the runner times the round trip around it. */
		printf("{\"now\":%.9f}\n", (double)clock_mono_ns() / NSEC_PER_SEC);
		fflush(stdout);
		return 0;
	}
	if (strncmp(line, "watch ", 6) == 0 && parse_u64(line + 6, 1, INT32_MAX, &pid) == 0) {
		if (sampler_watch(s, (pid_t)pid) < 0)
			log_warnx("cannot watch pid %s: already %d processes", line + 6,
				  SAMPLER_PIDS);
		return 0;
	}
	log_warnx("ignored '%s' on stdin: expected \"watch PID\", \"now\" or \"stop\"",
		  printable(line));
	return 0;
}

/* Reads what stdin holds; returns 1 at a stop or the end of stdin. */
static int read_commands(struct sampler *s, struct cmdin *in)
{
	ssize_t n = read(STDIN_FILENO, in->buf + in->used, sizeof(in->buf) - in->used);
	char *nl;

	if (n <= 0)
		return n == 0 || errno != EINTR;
	in->used += (size_t)n;
	while ((nl = memchr(in->buf, '\n', in->used))) {
		size_t len = (size_t)(nl - in->buf);

		if (in->too_long) /* the end of a line already refused */
			in->too_long = false;
		else if (command(s, in->buf, len))
			return 1;
		in->used -= len + 1;
		memmove(in->buf, nl + 1, in->used);
	}
	/* No newline in a full buffer: no command is this long. The whole line is refused, up
	 * to its newline, so that its tail is not read as a line of its own. */
	if (in->used == sizeof(in->buf)) {
		if (!in->too_long)
			log_warnx("ignored a line longer than %d bytes on stdin",
				  SAMPLER_LINE_MAX - 1);
		in->too_long = true;
		in->used = 0;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct sampler s;
	struct cmdin in = { .used = 0 };
	unsigned hz = DEFAULT_HZ;
	struct itimerspec its = { 0 };
	struct pollfd pfd[3];
	int rc, tfd, sfd;

	log_init(argv[0], LOG_LEVEL_WARN);
	rc = parse_args(argc, argv, &hz, &s);
	if (rc)
		return rc > 0 ? 0 : EXIT_USAGE;
	/* A reader that goes away is an error of the write, not a signal that kills us. */
	sfd = sigfd_open(SIGFD_PIPE);
	if (sfd < 0)
		fatal("signalfd");
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	if (tfd < 0)
		fatal("timerfd");
	its.it_interval.tv_sec = hz == 1;
	its.it_interval.tv_nsec = hz == 1 ? 0 : 1000000000L / hz;
	its.it_value = its.it_interval;
	if (timerfd_settime(tfd, 0, &its, NULL) < 0)
		fatal("timerfd_settime");
	if (emit(sampler_header(hz)) || emit(sampler_take(&s)))
		return 1;
	pfd[0] = (struct pollfd){ .fd = tfd, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = STDIN_FILENO, .events = POLLIN };
	pfd[2] = (struct pollfd){ .fd = sfd, .events = POLLIN };
	for (;;) {
		uint64_t ticks;

		if (poll(pfd, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			fatal("poll");
		}
		if (pfd[2].revents)
			break;
		if (pfd[1].revents && read_commands(&s, &in))
			break;
		if (pfd[0].revents && read(tfd, &ticks, sizeof(ticks)) == sizeof(ticks) &&
		    emit(sampler_take(&s)))
			return 1;
	}
	return emit(sampler_take(&s)) ? 1 : 0;
}
