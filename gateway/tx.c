/*
 * Raw transmit socket (see tx.h; raw(7)).
 */
#include "tx.h"

#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#ifndef IPV6_HDRINCL
#define IPV6_HDRINCL 36
#endif

int tx_open(int family, unsigned timeout_ms)
{
	struct timeval tv = {
		.tv_sec = timeout_ms / 1000,
		.tv_usec = (timeout_ms % 1000) * 1000,
	};
	int fd, one = 1, rc;

	fd = socket(family, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
	if (fd < 0)
		return -errno;
	/* IPv4 IPPROTO_RAW implies IP_HDRINCL; IPv6 needs asking. A bounded wait keeps a
	 * stuck queue from holding a worker past a stop request. */
	if ((family == AF_INET6 &&
	     setsockopt(fd, IPPROTO_IPV6, IPV6_HDRINCL, &one, sizeof(one)) < 0) ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}
