/*
 * TUN reads through io_uring (see tun_uring.h; liburing, io_uring_setup(2),
 * io_uring_register(2)).
 */
#include "tun_uring.h"

#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "gw_limits.h"

/* The user data of a cancellation's completion: no slot's. */
#define CANCEL_TAG UINT64_MAX

struct tun_uring {
	struct io_uring ring;
	int fd;
};

/* io_uring_register(2) by hand: Debian 12's liburing 2.3 declares io_uring_register_restrictions
 * and io_uring_enable_rings but does not export them (its liburing.map lacks them). Returns 0
 * or -errno. */
static int ring_register(struct tun_uring *u, unsigned op, const void *arg, unsigned nr)
{
	if (syscall(__NR_io_uring_register, u->ring.ring_fd, op, arg, nr) < 0)
		return -errno;
	return 0;
}

int tun_uring_init(struct tun_uring **out, int fd, uint8_t *mem, size_t len, const char **what)
{
	/* The ring may only read into the registered buffer, the reads chained or not, and
	 * cancel them: whatever runs in this process later cannot make it do more, and no
	 * io_uring_register is allowed once it is enabled (seccomp allows io_uring_enter
	 * alone). The queue's fd is not
	 * registered: a registered file is let go by the ring's exit work, after the process,
	 * and the TUN device would outlive gregw for that while; a read holds the fd only while
	 * it is lent, and the worker's thread cancels those as it ends. */
	struct io_uring_restriction allow[] = {
		{ .opcode = IORING_RESTRICTION_SQE_OP, .sqe_op = IORING_OP_READ_FIXED },
		{ .opcode = IORING_RESTRICTION_SQE_OP, .sqe_op = IORING_OP_ASYNC_CANCEL },
		{ .opcode = IORING_RESTRICTION_SQE_FLAGS_ALLOWED, .sqe_flags = IOSQE_IO_HARDLINK },
	};
	/* Cooperative: a completion's work waits for the worker's next system call rather
	 * than interrupting it. */
	struct io_uring_params p = { .flags = IORING_SETUP_R_DISABLED | IORING_SETUP_COOP_TASKRUN };
	struct iovec iov = { .iov_base = mem, .iov_len = len };
	struct io_uring_probe *probe;
	struct tun_uring *u;
	bool has_read;
	int rc;

	*out = NULL;
	u = calloc(1, sizeof(*u));
	if (!u) {
		*what = "memory";
		return -ENOMEM;
	}
	u->fd = fd;
	rc = io_uring_queue_init_params(WORKER_BATCH, &u->ring, &p);
	if (rc) {
		*what = "io_uring_setup with a disabled, cooperative ring (Linux 5.19)";
		goto err_free;
	}
	probe = io_uring_get_probe_ring(&u->ring);
	has_read = probe && io_uring_opcode_supported(probe, IORING_OP_READ_FIXED) &&
		   io_uring_opcode_supported(probe, IORING_OP_ASYNC_CANCEL);
	if (probe)
		io_uring_free_probe(probe);
	if (!has_read) {
		rc = -EOPNOTSUPP;
		*what = "IORING_OP_READ_FIXED (Linux 5.6)";
		goto err_ring;
	}
	rc = io_uring_register_buffers(&u->ring, &iov, 1);
	if (rc) {
		*what = "a registered buffer (Linux 5.1; RLIMIT_MEMLOCK)";
		goto err_ring;
	}
	rc = ring_register(u, IORING_REGISTER_RESTRICTIONS, allow,
			   sizeof(allow) / sizeof(allow[0]));
	if (rc == 0)
		rc = ring_register(u, IORING_REGISTER_ENABLE_RINGS, NULL, 0);
	if (rc) {
		*what = "io_uring restrictions (Linux 5.10)";
		goto err_ring;
	}
	*out = u;
	return 0;

err_ring:
	io_uring_queue_exit(&u->ring);
err_free:
	free(u);
	return rc;
}

int tun_uring_probe(int fd, const char **what)
{
	enum { PROBE_LEN = 4096 };
	uint8_t *mem = aligned_alloc(PROBE_LEN, PROBE_LEN);
	struct tun_uring *u;
	int rc;

	if (!mem) {
		*what = "memory";
		return -ENOMEM;
	}
	rc = tun_uring_init(&u, fd, mem, PROBE_LEN, what);
	tun_uring_fini(u);
	free(mem);
	return rc;
}

void tun_uring_fini(struct tun_uring *u)
{
	if (!u)
		return;
	io_uring_queue_exit(&u->ring);
	free(u);
}

int tun_uring_fd(const struct tun_uring *u)
{
	return u->ring.ring_fd;
}

void tun_uring_lend(struct tun_uring *u, uint32_t slot, uint8_t *buf, size_t room, bool then)
{
	/* Never NULL: at most WORKER_BATCH reads are lent, the ring's size, and each is
	 * submitted before its completion can be taken. */
	struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);

	/* Offset 0: a TUN queue has no file position. */
	io_uring_prep_read_fixed(sqe, u->fd, buf, (unsigned)room, 0, 0);
	/* A hard link: the next read goes on whatever this one's length (a soft link would
	 * take a read shorter than its buffer, that is every one, for a failure). */
	if (then)
		sqe->flags |= IOSQE_IO_HARDLINK;
	io_uring_sqe_set_data64(sqe, slot);
}

int tun_uring_submit(struct tun_uring *u)
{
	int rc = io_uring_submit(&u->ring);

	/* The kernel stops at a request it fails to set up: the rest wait in the ring. */
	if (rc >= 0 && io_uring_sq_ready(&u->ring))
		return -EAGAIN;
	return rc;
}

bool tun_uring_take(struct tun_uring *u, uint32_t *slot, int *res)
{
	struct io_uring_cqe *cqe;

	while (io_uring_cq_ready(&u->ring) && io_uring_peek_cqe(&u->ring, &cqe) == 0) {
		uint64_t data = io_uring_cqe_get_data64(cqe);

		*res = cqe->res;
		io_uring_cqe_seen(&u->ring, cqe);
		if (data == CANCEL_TAG)
			continue;
		*slot = (uint32_t)data;
		return true;
	}
	return false;
}

int tun_uring_cancel(struct tun_uring *u)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
	int rc;

	if (!sqe)
		return -EBUSY;
	io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY | IORING_ASYNC_CANCEL_ALL);
	io_uring_sqe_set_data64(sqe, CANCEL_TAG);
	rc = io_uring_submit_and_wait(&u->ring, 1);
	return rc < 0 ? rc : 0;
}
