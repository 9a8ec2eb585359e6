/*
 * TUN reads lent to io_uring (gateway/tun_uring.c), on a non-blocking pipe, which io_uring
 * reads as it does a TUN queue: a read lent on data completes within the submitting call; one
 * lent on an empty pipe does not come back as -EAGAIN but waits in the kernel, and completes
 * once data comes (at the thread's next system call), the bytes in its buffer; a chain's
 * reads are issued in turn, each after the one before, whatever its length, within the call
 * while there is data, each with its slot. The ring's fd is
 * readable once a read has completed. Only reads into the registered buffer: a buffer outside
 * it is refused (-EFAULT), not written. A cancellation ends the read that waits, and the chain
 * issues the next. Releasing the ring with a read lent works.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "tun_uring.h"

enum { BUF = 4096, ROOM = 256 };

static bool readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

int main(void)
{
	uint8_t *mem = aligned_alloc(BUF, BUF), outside[ROOM];
	struct tun_uring *u;
	const char *what = NULL;
	uint32_t slot;
	int p[2], res, rc;

	CHECK(mem != NULL);
	CHECK_INT(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
	rc = tun_uring_init(&u, p[0], mem, BUF, &what);
	CHECK_INT(rc, 0);
	if (rc) {
		fprintf(stderr, "tun_uring_init: %s: %s\n", what, strerror(-rc));
		return check_done("test_tun_uring");
	}
	CHECK_INT(tun_uring_probe(p[0], &what), 0);

	/* Data first: the read completes within the call. */
	CHECK_INT(write(p[1], "abc", 3), 3);
	tun_uring_lend(u, 7, mem, ROOM, false);
	CHECK_INT(tun_uring_submit(u), 1);
	CHECK(readable(tun_uring_fd(u)));
	CHECK(tun_uring_take(u, &slot, &res));
	CHECK_INT(slot, 7);
	CHECK_INT(res, 3);
	CHECK(memcmp(mem, "abc", 3) == 0);
	CHECK(!tun_uring_take(u, &slot, &res));

	/* A chain on an empty pipe: its first read waits, lent, and completes as data comes;
	 * the next is issued then, and waits in turn. */
	tun_uring_lend(u, 1, mem + ROOM, ROOM, true);
	tun_uring_lend(u, 2, mem + 2 * ROOM, ROOM, false);
	CHECK_INT(tun_uring_submit(u), 2);
	CHECK(!tun_uring_take(u, &slot, &res));
	CHECK(!readable(tun_uring_fd(u)));
	CHECK_INT(write(p[1], "defg", 4), 4);
	CHECK(readable(tun_uring_fd(u)));
	CHECK(tun_uring_take(u, &slot, &res));
	CHECK_INT(slot, 1);
	CHECK_INT(res, 4);
	CHECK(memcmp(mem + ROOM, "defg", 4) == 0);
	CHECK(!tun_uring_take(u, &slot, &res));
	CHECK_INT(write(p[1], "hi", 2), 2);
	CHECK(tun_uring_take(u, &slot, &res));
	CHECK_INT(slot, 2);
	CHECK_INT(res, 2);
	CHECK(memcmp(mem + 2 * ROOM, "hi", 2) == 0);

	/* A chain on data: every read within the call, in order, the last one short. */
	CHECK_INT(write(p[1], "0123456789", 10), 10);
	tun_uring_lend(u, 5, mem, 4, true);
	tun_uring_lend(u, 6, mem + ROOM, 4, true);
	tun_uring_lend(u, 7, mem + 2 * ROOM, 4, false);
	CHECK_INT(tun_uring_submit(u), 3);
	for (uint32_t i = 0; i < 3; i++) {
		CHECK(tun_uring_take(u, &slot, &res));
		CHECK_INT(slot, 5 + i);
		CHECK_INT(res, i < 2 ? 4 : 2);
	}
	CHECK(memcmp(mem + 2 * ROOM, "89", 2) == 0);

	/* Outside the registered buffer: refused, nothing written there, nothing taken. */
	memset(outside, 0, sizeof(outside));
	CHECK_INT(write(p[1], "jk", 2), 2);
	tun_uring_lend(u, 3, outside, ROOM, false);
	CHECK_INT(tun_uring_submit(u), 1);
	CHECK(tun_uring_take(u, &slot, &res));
	CHECK_INT(slot, 3);
	CHECK_INT(res, -EFAULT);
	CHECK(outside[0] == 0);
	CHECK_INT(read(p[0], outside, sizeof(outside)), 2);

	/* Cancelled: the read that waits ends (-ECANCELED), then the one the chain issued
	 * behind it. */
	tun_uring_lend(u, 4, mem, ROOM, true);
	tun_uring_lend(u, 5, mem + ROOM, ROOM, false);
	CHECK_INT(tun_uring_submit(u), 2);
	CHECK(!tun_uring_take(u, &slot, &res));
	for (uint32_t i = 4; i <= 5; i++) {
		CHECK_INT(tun_uring_cancel(u), 0);
		CHECK(tun_uring_take(u, &slot, &res));
		CHECK_INT(slot, i);
		CHECK_INT(res, -ECANCELED);
	}
	CHECK_INT(tun_uring_cancel(u), 0);
	CHECK(!tun_uring_take(u, &slot, &res));

	/* Released with a read lent on an empty pipe. */
	tun_uring_lend(u, 6, mem, ROOM, false);
	CHECK_INT(tun_uring_submit(u), 1);
	tun_uring_fini(u);
	tun_uring_fini(NULL);
	close(p[0]);
	close(p[1]);
	free(mem);
	return check_done("test_tun_uring");
}
