/*
 * Control socket of gregw (see ctl.h).
 */
#include "ctl.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "fd.h"

static int make_addr(const char *path, struct sockaddr_un *sun)
{
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun->sun_path))
		return -ENAMETOOLONG;
	snprintf(sun->sun_path, sizeof(sun->sun_path), "%s", path);
	return 0;
}

static int make_dirs(const char *path)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int ctl_listen(const char *path)
{
	struct sockaddr_un sun;
	int fd, rc;

	rc = make_addr(path, &sun);
	if (!rc)
		rc = make_dirs(path);
	if (rc)
		return rc;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		int probe;

		if (errno != EADDRINUSE)
			goto err;
		/* Someone's socket file: refuse if it answers, replace it if it is stale. */
		probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (probe >= 0 && connect(probe, (struct sockaddr *)&sun, sizeof(sun)) == 0) {
			close(probe);
			close(fd);
			return -EADDRINUSE;
		}
		if (probe >= 0)
			close(probe);
		unlink(path);
		if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0)
			goto err;
	}
	if (listen(fd, 8) < 0)
		goto err;
	return fd;
err:
	return fd_close_err(fd);
}

int ctl_accept(int fd, char *cmd, size_t size)
{
	struct timeval tv = { .tv_sec = 1 };
	size_t used = 0;
	int c;

	c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
	if (c < 0)
		return -errno;
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	/* One short line; a client that sends nothing gets nothing after a second. */
	while (used + 1 < size) {
		ssize_t n = read(c, cmd + used, size - 1 - used);

		if (n <= 0)
			break;
		used += (size_t)n;
		if (memchr(cmd, '\n', used))
			break;
	}
	cmd[used] = '\0';
	cmd[strcspn(cmd, "\r\n")] = '\0';
	return c;
}

int ctl_request(const char *path, const char *cmd, FILE *out)
{
	struct sockaddr_un sun;
	char buf[65536];
	ssize_t n;
	int fd, rc;

	rc = make_addr(path, &sun);
	if (rc)
		return rc;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 || dprintf(fd, "%s\n", cmd) < 0)
		return fd_close_err(fd);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		fwrite(buf, 1, (size_t)n, out);
	rc = n < 0 ? -errno : 0;
	close(fd);
	return rc;
}
