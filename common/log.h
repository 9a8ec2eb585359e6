/*
 * Logging for every tunbed tool, after OpenBSD's ospfd/log.c: six calls, one line each, on
 * stderr, prefixed with the program name. Never call these on the packet path: drops are
 * counted, not logged.
 */
#ifndef TUNBED_LOG_H
#define TUNBED_LOG_H

#include <stdarg.h>

enum log_level {
	LOG_LEVEL_WARN = 0, /* warnings and errors only: the default */
	LOG_LEVEL_INFO = 1,
	LOG_LEVEL_DEBUG = 2,
};

/* Sets the program name shown before each line and the verbosity. Main thread, before others. */
void log_init(const char *progname, int level);
int log_level(void);

/* log_warn appends ": strerror(errno)"; log_warnx does not. Any thread, off the packet path. */
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Log like log_warn / log_warnx, then exit(1). Only before workers start. */
_Noreturn void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void fatalx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
