/*
 * What the error paths of every part do with a file descriptor: close it and report the call
 * that failed on it.
 */
#ifndef TUNBED_FD_H
#define TUNBED_FD_H

#include <errno.h>
#include <unistd.h>

/*
 * For a call on fd that just failed: closes fd and returns that call's -errno, taken before
 * close can change errno. Any thread.
 */
static inline int fd_close_err(int fd)
{
	int rc = -errno;

	close(fd);
	return rc;
}

#endif
