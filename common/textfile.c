/*
 * A small text file read whole (see textfile.h).
 */
#include "textfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int textfile_read(const char *path, size_t max, char **buf, size_t *len, char *why, size_t size)
{
	struct stat st;
	size_t used = 0;
	ssize_t n = 0;
	char *b;
	int fd, rc;

	*buf = NULL;
	*len = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		rc = -errno;
		snprintf(why, size, "cannot open: %s", strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		snprintf(why, size, "not a regular file");
		return -EINVAL;
	}
	if ((unsigned long long)st.st_size > max) {
		close(fd);
		snprintf(why, size, "file too large: at most %zu bytes", max);
		return -EFBIG;
	}
	b = malloc((size_t)st.st_size + 1);
	if (!b) {
		close(fd);
		snprintf(why, size, "out of memory");
		return -ENOMEM;
	}
	/* The size may change while it is read: a byte more than it is enough to tell. */
	while (used <= (size_t)st.st_size) {
		n = read(fd, b + used, (size_t)st.st_size + 1 - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		used += (size_t)n;
	}
	rc = n < 0 ? -errno : 0;
	close(fd);
	if (rc) {
		snprintf(why, size, "cannot read: %s", strerror(-rc));
	} else if (used > (size_t)st.st_size) {
		rc = -EAGAIN;
		snprintf(why, size, "changed while it was read");
	}
	if (rc) {
		free(b);
		return rc;
	}
	b[used] = '\0';
	*buf = b;
	*len = used;
	return 0;
}
