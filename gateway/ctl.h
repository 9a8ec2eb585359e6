/*
 * gregw's control socket: a Unix stream socket; a client sends one command line ("stats" or
 * "flows") and reads one JSON document back, then the server closes the connection.
 */
#ifndef TUNBED_GW_CTL_H
#define TUNBED_GW_CTL_H

#include <stdio.h>

/*
 * Listens on path, creating its directory. A live socket there (another gregw answers) is
 * refused with -EADDRINUSE; a stale one is replaced. Returns a non-blocking fd or -errno.
 */
int ctl_listen(const char *path);

/* Accepts one connection on fd and reads its command line (one second at most) into cmd.
 * Returns the connection fd, or -errno (-EAGAIN when no client is waiting). */
int ctl_accept(int fd, char *cmd, size_t size);

/* Connects to path, sends cmd, copies the answer to out. Returns 0 or -errno. */
int ctl_request(const char *path, const char *cmd, FILE *out);

#endif
