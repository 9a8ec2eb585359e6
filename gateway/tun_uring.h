/*
 * A worker's TUN reads through io_uring (--tun-io uring): reads are lent to a ring, each with
 * a slot to read into, as a chain (each read issued once the one before has completed), and
 * submitted together by one io_uring_enter where read(2) makes a call each. Reads that find
 * packets complete within that call; the first to find the queue empty waits in the kernel
 * (io_uring polls the queue for it, even on a non-blocking fd) and completes when a packet
 * comes, in the worker's thread at its next system call or wake-up, the rest of the chain
 * behind it: so one read at most waits on the queue. Completions are taken from the ring's
 * memory, without a call. The ring may only read, into the slots (one registered buffer), by
 * its restrictions; it is set up before privileges are dropped.
 */
#ifndef TUNBED_GW_TUN_URING_H
#define TUNBED_GW_TUN_URING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tun_uring;

/*
 * Sets up in *out a ring of up to WORKER_BATCH reads from fd (not taken over) into mem (len
 * bytes: every buffer lent lies within it). Main thread, before privileges are dropped.
 * Returns 0, or -errno with *what naming the step the kernel refused and the Linux version
 * it came in: -ENOSYS or -EPERM from io_uring_setup (kernel.io_uring_disabled may refuse
 * it), -EINVAL from a disabled ring or its restrictions (5.10), -ENOMEM from the buffer's
 * registration (locked memory), -EOPNOTSUPP when IORING_OP_READ_FIXED (5.6) is missing.
 */
int tun_uring_init(struct tun_uring **out, int fd, uint8_t *mem, size_t len, const char **what);

/* Whether the kernel gives a ring reading fd as tun_uring_init sets it up (a small one, made
 * and released). Returns 0 or tun_uring_init's -errno and *what. Main thread. */
int tun_uring_probe(int fd, const char **what);

/* Releases the ring; u may be NULL. Not fd, not mem. The reads still lent are cancelled
 * when the thread that submitted them ends (before this, for a worker's). */
void tun_uring_fini(struct tun_uring *u);

/* The ring's fd: readable when a read has completed (a worker polls it beside the queue's). */
int tun_uring_fd(const struct tun_uring *u);

/* Lends a read of up to room bytes into buf (within mem) for slot, to go with the next
 * tun_uring_submit; then: the next read lent is chained behind it. At most WORKER_BATCH
 * reads are lent at once. Worker thread. */
void tun_uring_lend(struct tun_uring *u, uint32_t slot, uint8_t *buf, size_t room, bool then);

/* Submits the reads lent since the last call, with one io_uring_enter. Returns how many, or
 * -errno when some were not (they stay queued for the next call; -EAGAIN: the kernel took
 * only the first of them). Worker thread. */
int tun_uring_submit(struct tun_uring *u);

/*
 * Cancels the read waiting on the queue, with one io_uring_enter that returns once the
 * cancellation is done (Linux 5.19: IORING_ASYNC_CANCEL_ANY); the next of its chain is issued
 * then, and may wait in turn. Its completion (-ECANCELED), and those of the reads that took
 * packets meanwhile, are tun_uring_take's. Worker thread, the one that submitted the reads:
 * a read left waiting when it ends holds the queue's fd until the ring's exit work, after
 * the process. Returns 0 or -errno.
 */
int tun_uring_cancel(struct tun_uring *u);

/* The next completed read, without a call: its slot in *slot and its length, or -errno, in
 * *res. False when none has completed. Worker thread. */
bool tun_uring_take(struct tun_uring *u, uint32_t *slot, int *res);

#endif
