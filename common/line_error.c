/*
 * A refusal of a line of a file (see line_error.h).
 */
#include "line_error.h"

#include <stdarg.h>
#include <stdio.h>

static void vset(struct line_error *e, int line, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

static void vset(struct line_error *e, int line, const char *fmt, va_list ap)
{
	e->line = line;
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
}

int line_error_set(struct line_error *e, int rc, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vset(e, line, fmt, ap);
	va_end(ap);
	return rc;
}

int line_error_first(struct line_error *e, int *first, int rc, int line, const char *fmt, ...)
{
	va_list ap;

	if (*first)
		return 0;
	*first = rc;
	va_start(ap, fmt);
	vset(e, line, fmt, ap);
	va_end(ap);
	return 0;
}

const char *line_error_text(const char *path, const struct line_error *e, char *buf, size_t size)
{
	if (e->line > 0)
		snprintf(buf, size, "%s:%d: %s", path, e->line, e->msg);
	else
		snprintf(buf, size, "%s: %s", path, e->msg);
	return buf;
}
