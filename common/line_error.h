/*
 * A refusal of a line of a file: its line number and what is wrong, as every reader of a
 * small text file (the tunnel file, the topology file, the --pairs file) fills it, and the one
 * line "FILE:LINE: MESSAGE" it is shown as.
 */
#ifndef TUNBED_LINE_ERROR_H
#define TUNBED_LINE_ERROR_H

#include <stddef.h>

enum {
	/* A message quotes a value or two of one line, and no reader takes a line longer than
	 * 256 bytes (--pairs; the INI files 198): the topology file's size, the largest of the
	 * three readers' own buffers (the tunnel file had 320, --pairs 160). */
	LINE_ERROR_MSG_MAX = 640,
};

struct line_error {
	int line; /* 1-based; 0: the file (or a change) as a whole */
	char msg[LINE_ERROR_MSG_MAX];
};

/*
 * Sets *e to line and the message of fmt (cut as vsnprintf cuts). Returns rc, for
 * "return line_error_set(err, -EINVAL, line, ...)". Pure; any thread.
 */
int line_error_set(struct line_error *e, int rc, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * For a parser that goes on after a refusal (libinih calls its handler for every line): sets
 * *e as line_error_set does and *first to rc, but only while *first is 0: the first refusal is
 * kept, what follows it is noise it caused. Returns 0, what a libinih handler returns to say a
 * line was refused. Pure; any thread.
 */
int line_error_first(struct line_error *e, int *first, int rc, int line, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/*
 * The one line a refusal of file path gets: "PATH:LINE: MESSAGE", or "PATH: MESSAGE" about the
 * whole file (line 0), into buf (size bytes, cut as snprintf cuts); returns buf. Pure.
 */
const char *line_error_text(const char *path, const struct line_error *e, char *buf, size_t size);

#endif
