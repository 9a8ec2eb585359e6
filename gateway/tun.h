/*
 * The TUN device of gregw: one multi-queue device (IFF_TUN | IFF_NO_PI | IFF_MULTI_QUEUE),
 * one non-blocking fd per queue, one queue per worker. Not persistent: the device goes away
 * with the last fd.
 */
#ifndef TUNBED_GW_TUN_H
#define TUNBED_GW_TUN_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * Creates TUN device name in the calling thread's namespace with n queues and stores their
 * fds in fds[0..n). Refuses a name that is already a device (-EEXIST): attaching to another
 * program's multi-queue device would steal its packets. With vnet_hdr every read and write
 * starts with a struct virtio_net_hdr. Returns 0 or -errno.
 */
int tun_open(const char *name, unsigned n, bool vnet_hdr, int *fds);

/*
 * Offers the kernel the best offloads it accepts (TUN_F_* of linux/if_tun.h), from checksum,
 * TSO4, TSO6, TSO with ECN, USO4 and USO6 down to none: a kernel refuses flags it does not
 * know. Returns the flags in force, or -errno.
 */
int tun_offload(int fd);

/* "csum,tso4,tso6,tso_ecn,uso4,uso6" for the flags in force; "none" for none. */
const char *tun_offload_names(int flags, char *buf, size_t len);

/* Closes n queue fds; the device goes away with the last. */
void tun_close(int *fds, unsigned n);

#endif
