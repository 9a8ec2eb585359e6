/*
 * The signals that stop a tool, taken by its main loop from a signalfd instead of a handler:
 * every tunbed tool stops on SIGINT and SIGTERM this way, and blocks them before it starts a
 * thread so that only the main loop sees them.
 */
#ifndef TUNBED_SIGFD_H
#define TUNBED_SIGFD_H

enum sigfd_flags {
	SIGFD_HUP = 1u << 0,	  /* SIGHUP stops the tool too (gregw) */
	SIGFD_PIPE = 1u << 1,	  /* SIGPIPE blocked as well, and not read: a write to a closed
				   * socket or pipe fails with EPIPE instead of killing the tool */
	SIGFD_NONBLOCK = 1u << 2, /* a non-blocking fd, for a poll loop */
};

/*
 * Blocks SIGINT, SIGTERM and what flags add in the calling thread, so also in every thread it
 * starts afterwards, and opens a close-on-exec signalfd that reads SIGINT, SIGTERM and, with
 * SIGFD_HUP, SIGHUP. Main thread, before any other thread starts. Returns the fd, or -errno of
 * signalfd (errno is left as signalfd set it; the signals stay blocked).
 */
int sigfd_open(unsigned flags);

#endif
