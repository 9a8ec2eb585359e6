/*
 * Logging: six calls writing one line each to stderr (see log.h).
 */
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *log_progname = "tunbed";
static int log_verbosity = LOG_LEVEL_WARN;

void log_init(const char *progname, int level)
{
	const char *slash;

	if (progname) {
		slash = strrchr(progname, '/');
		log_progname = slash ? slash + 1 : progname;
	}
	log_verbosity = level;
}

int log_level(void)
{
	return log_verbosity;
}

/* One fprintf per line, so that lines from two threads never interleave mid-line. */
static void vlog(int err, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

static void vlog(int err, const char *fmt, va_list ap)
{
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (err)
		fprintf(stderr, "%s: %s: %s\n", log_progname, msg, strerror(err));
	else
		fprintf(stderr, "%s: %s\n", log_progname, msg);
}

void log_warn(const char *fmt, ...)
{
	int err = errno;
	va_list ap;

	va_start(ap, fmt);
	vlog(err, fmt, ap);
	va_end(ap);
	errno = err;
}

void log_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(0, fmt, ap);
	va_end(ap);
}

void log_info(const char *fmt, ...)
{
	va_list ap;

	if (log_verbosity < LOG_LEVEL_INFO)
		return;
	va_start(ap, fmt);
	vlog(0, fmt, ap);
	va_end(ap);
}

void log_debug(const char *fmt, ...)
{
	va_list ap;

	if (log_verbosity < LOG_LEVEL_DEBUG)
		return;
	va_start(ap, fmt);
	vlog(0, fmt, ap);
	va_end(ap);
}

void fatal(const char *fmt, ...)
{
	int err = errno;
	va_list ap;

	va_start(ap, fmt);
	vlog(err, fmt, ap);
	va_end(ap);
	exit(1);
}

void fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(0, fmt, ap);
	va_end(ap);
	exit(1);
}
