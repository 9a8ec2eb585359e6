/*
 * A topology file to a checked topology: the file's syntax (topo_parse.c), then the
 * cross-checks (topo_validate.c). Parser and validator never call each other; this module
 * calls both, and reads the file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "topo.h"

int topo_parse(const char *text, size_t len, struct topo *t, struct line_error *err)
{
	int rc = topo_parse_syntax(text, len, t, err);

	return rc ? rc : topo_validate(t, err);
}

int topo_load(const char *path, struct topo *t, struct line_error *err)
{
	char *buf;
	size_t used = 0;
	ssize_t n;
	int fd, rc;

	memset(err, 0, sizeof(*err));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		return line_error_set(err, rc, 0, "cannot open: %s", strerror(-rc));
	}
	buf = malloc(TOPO_FILE_MAX + 1);
	if (!buf) {
		close(fd);
		return line_error_set(err, -ENOMEM, 0, "out of memory");
	}
	for (;;) {
		n = read(fd, buf + used, TOPO_FILE_MAX + 1 - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		used += (size_t)n;
		if (used > TOPO_FILE_MAX)
			break;
	}
	rc = n < 0 ? -errno : 0;
	close(fd);
	if (rc) {
		line_error_set(err, rc, 0, "cannot read: %s", strerror(-rc));
	} else if (used > TOPO_FILE_MAX) {
		rc = line_error_set(err, -EFBIG, 0, "file too large: at most %d bytes",
				    TOPO_FILE_MAX);
	} else {
		rc = topo_parse(buf, used, t, err);
	}
	free(buf);
	return rc;
}
