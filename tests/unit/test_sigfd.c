/*
 * Unit tests for common/sigfd.c: for each combination the tools use, which signals end up
 * blocked, the fd's flags, the stop signals read back from it, and SIGPIPE blocked but unread.
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "sigfd.h"

/* Raises sig (blocked, so pending) and reads it back through fd. */
static int raise_and_read(int fd, int sig)
{
	struct signalfd_siginfo si;

	if (raise(sig) != 0 || read(fd, &si, sizeof(si)) != sizeof(si))
		return -1;
	return (int)si.ssi_signo;
}

static void test_open(void)
{
	static const struct {
		const char *name;
		unsigned flags;
	} rows[] = {
		{ "stop signals only", 0 },
		{ "non-blocking", SIGFD_NONBLOCK },
		{ "with SIGHUP", SIGFD_HUP | SIGFD_NONBLOCK },
		{ "with SIGPIPE (the client's)", SIGFD_PIPE | SIGFD_NONBLOCK },
		{ "blocking, with SIGPIPE (the server's)", SIGFD_PIPE },
		{ "everything (gregw's)", SIGFD_HUP | SIGFD_PIPE | SIGFD_NONBLOCK },
	};
	sigset_t none;

	sigemptyset(&none);
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		unsigned f = rows[r].flags;
		const char *row = rows[r].name;
		sigset_t cur, pipe_only;
		int fd;

		pthread_sigmask(SIG_SETMASK, &none, NULL);
		fd = sigfd_open(f);
		CHECK_ROW(fd >= 0, row);
		if (fd < 0)
			continue;
		pthread_sigmask(SIG_BLOCK, NULL, &cur);
		CHECK_ROW(sigismember(&cur, SIGINT) == 1, row);
		CHECK_ROW(sigismember(&cur, SIGTERM) == 1, row);
		CHECK_ROW(sigismember(&cur, SIGHUP) == !!(f & SIGFD_HUP), row);
		CHECK_ROW(sigismember(&cur, SIGPIPE) == !!(f & SIGFD_PIPE), row);
		CHECK_ROW(fcntl(fd, F_GETFD) & FD_CLOEXEC, row);
		CHECK_ROW(!!(fcntl(fd, F_GETFL) & O_NONBLOCK) == !!(f & SIGFD_NONBLOCK), row);

		CHECK_ROW(raise_and_read(fd, SIGINT) == SIGINT, row);
		CHECK_ROW(raise_and_read(fd, SIGTERM) == SIGTERM, row);
		if (f & SIGFD_HUP)
			CHECK_ROW(raise_and_read(fd, SIGHUP) == SIGHUP, row);
		if (f & SIGFD_PIPE) {
			struct pollfd p = { .fd = fd, .events = POLLIN };
			struct timespec zero = { 0 };

			/* Pending, yet not for the fd: it is taken here, before the mask goes. */
			CHECK_ROW(raise(SIGPIPE) == 0, row);
			CHECK_ROW(poll(&p, 1, 0) == 0, row);
			sigemptyset(&pipe_only);
			sigaddset(&pipe_only, SIGPIPE);
			CHECK_ROW(sigtimedwait(&pipe_only, NULL, &zero) == SIGPIPE, row);
		}
		if (f & SIGFD_NONBLOCK) {
			struct signalfd_siginfo si;

			CHECK_ROW(read(fd, &si, sizeof(si)) < 0, row);
		}
		close(fd);
	}
	pthread_sigmask(SIG_SETMASK, &none, NULL);
}

int main(void)
{
	test_open();
	return check_done("test_sigfd");
}
