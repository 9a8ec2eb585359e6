/*
 * Stop signals through a signalfd (see sigfd.h).
 */
#include "sigfd.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/signalfd.h>

int sigfd_open(unsigned flags)
{
	sigset_t sigs;
	int fd;

	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	if (flags & SIGFD_HUP)
		sigaddset(&sigs, SIGHUP);
	if (flags & SIGFD_PIPE)
		sigaddset(&sigs, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	/* SIGPIPE stays blocked but unread: the write that met the closed peer says EPIPE. */
	sigdelset(&sigs, SIGPIPE);
	fd = signalfd(-1, &sigs, SFD_CLOEXEC | ((flags & SIGFD_NONBLOCK) ? SFD_NONBLOCK : 0));
	return fd < 0 ? -errno : fd;
}
