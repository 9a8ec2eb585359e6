/*
 * GRE-in-UDP sockets (see udp.h; udp(7), Documentation/networking/segmentation-offloads.rst).
 */
#include "udp.h"

#include <errno.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "fd.h"
#include "netaddr.h"

int udp_rx_open(int family, const uint8_t *local, uint16_t port, bool gro)
{
	struct sockaddr_storage ss;
	socklen_t len = netaddr_sockaddr(family, local, port, &ss);
	int fd, one = 1, rcvbuf = UDP_RCVBUF;

	fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_UDP);
	if (fd < 0)
		return -errno;
	/* A bounded queue, larger than rmem_max allows: root may force it. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	/* The kernel reassembles outer fragments before the socket; it says so by the size of
	 * the largest fragment, and gregw drops what the tunnel (DF, never fragmenting) would
	 * never have sent. */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0 ||
	    (family == AF_INET6
		     ? setsockopt(fd, IPPROTO_IPV6, IPV6_RECVFRAGSIZE, &one, sizeof(one))
		     : setsockopt(fd, IPPROTO_IP, IP_RECVFRAGSIZE, &one, sizeof(one))) < 0 ||
	    (gro && setsockopt(fd, IPPROTO_UDP, UDP_GRO, &one, sizeof(one)) < 0) ||
	    bind(fd, (struct sockaddr *)&ss, len) < 0)
		return fd_close_err(fd);
	return fd;
}

int udp_tx_open(int family, const uint8_t *local, uint16_t *sport, const uint8_t *remote,
		uint16_t port, unsigned timeout_ms)
{
	struct timeval tv = {
		.tv_sec = timeout_ms / 1000,
		.tv_usec = (timeout_ms % 1000) * 1000,
	};
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, one = 1;

	fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_UDP);
	if (fd < 0)
		return -errno;
	len = netaddr_sockaddr(family, local, *sport, &ss);
	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&ss, len) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		goto err;
	*sport = ntohs(family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
					  : ((struct sockaddr_in *)&ss)->sin_port);
	len = netaddr_sockaddr(family, remote, port, &ss);
	if (connect(fd, (struct sockaddr *)&ss, len) < 0)
		goto err;
	return fd;
err:
	return fd_close_err(fd);
}

uint64_t udp_drops(int fd)
{
	uint32_t mem[SK_MEMINFO_VARS];
	socklen_t len = sizeof(mem);

	memset(mem, 0, sizeof(mem));
	if (getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mem, &len) < 0 ||
	    len <= SK_MEMINFO_DROPS * sizeof(uint32_t))
		return 0;
	return mem[SK_MEMINFO_DROPS];
}

void udp_probe(int family, bool *gso, bool *gro)
{
	int fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_UDP), size = 1200, one = 1;

	*gso = *gro = false;
	if (fd < 0)
		return;
	/* A kernel without them refuses the options. */
	*gso = setsockopt(fd, IPPROTO_UDP, UDP_SEGMENT, &size, sizeof(size)) == 0;
	*gro = setsockopt(fd, IPPROTO_UDP, UDP_GRO, &one, sizeof(one)) == 0;
	close(fd);
}
