/*
 * A fault for the tests, preloaded into gregw (LD_PRELOAD): sendmmsg refuses any message
 * that carries UDP_SEGMENT with EIO, as the kernel does when the route cannot take UDP GSO
 * (an IPsec policy on it; before Linux 6.11 also a device without checksum offload), and
 * passes the messages before it on. Nothing else is touched.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdbool.h>
#include <sys/socket.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

typedef int sendmmsg_fn(int, struct mmsghdr *, unsigned int, int);

static bool has_udp_segment(struct msghdr *m)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c))
		if (c->cmsg_level == IPPROTO_UDP && c->cmsg_type == UDP_SEGMENT)
			return true;
	return false;
}

static sendmmsg_fn *real_sendmmsg;

/* Resolved once, before any thread of gregw runs. */
__attribute__((constructor)) static void resolve(void)
{
	real_sendmmsg = (sendmmsg_fn *)dlsym(RTLD_NEXT, "sendmmsg");
}

int sendmmsg(int fd, struct mmsghdr *msgs, unsigned int n, int flags)
{
	for (unsigned int i = 0; i < n; i++) {
		if (!has_udp_segment(&msgs[i].msg_hdr))
			continue;
		if (i == 0) {
			errno = EIO;
			return -1;
		}
		return real_sendmmsg(fd, msgs, i, flags);
	}
	return real_sendmmsg(fd, msgs, n, flags);
}
