/*
 * The TUN device of gregw: one multi-queue device (IFF_TUN | IFF_NO_PI | IFF_MULTI_QUEUE),
 * one non-blocking fd per queue, one queue per worker. Not persistent: the device goes away
 * with the last fd.
 */
#ifndef TUNBED_GW_TUN_H
#define TUNBED_GW_TUN_H

#include <net/if.h>

/*
 * Creates TUN device name in the calling thread's namespace with n queues and stores their
 * fds in fds[0..n). Refuses a name that is already a device (-EEXIST): attaching to another
 * program's multi-queue device would steal its packets. Returns 0 or -errno.
 */
int tun_open(const char *name, unsigned n, int *fds);

/* Closes n queue fds; the device goes away with the last. */
void tun_close(int *fds, unsigned n);

#endif
