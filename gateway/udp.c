/*
 * GRE-in-UDP sockets (see udp.h; udp(7), Documentation/networking/segmentation-offloads.rst).
 */
#include "udp.h"

#include <errno.h>
#include <fcntl.h>
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

/* The decimal number that is the word at p (n bytes), at most 2^64 - 1. */
static int number(const char *p, size_t n, uint64_t *out)
{
	uint64_t v = 0;

	if (n == 0)
		return -ENODATA;
	for (size_t i = 0; i < n; i++) {
		unsigned d = (unsigned)(p[i] - '0');

		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return -ENODATA;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

/* The next line of text from *p (to end), without its newline; false at the end. */
static bool next_line(const char **p, const char *end, const char **line, size_t *len)
{
	const char *eol;

	if (*p >= end)
		return false;
	eol = memchr(*p, '\n', (size_t)(end - *p));
	if (!eol)
		eol = end;
	*line = *p;
	*len = (size_t)(eol - *p);
	*p = eol + 1;
	return true;
}

/* The i-th blank-separated word of a line (n bytes), or NULL; its length in *wlen. */
static const char *word(const char *line, size_t n, unsigned i, size_t *wlen)
{
	size_t at = 0;

	for (;;) {
		size_t start;

		while (at < n && (line[at] == ' ' || line[at] == '\t'))
			at++;
		start = at;
		while (at < n && line[at] != ' ' && line[at] != '\t')
			at++;
		if (start == at)
			return NULL;
		if (i-- == 0) {
			*wlen = at - start;
			return line + start;
		}
	}
}

/* The "Udp:" table of /proc/net/snmp: a line of names, then a line of values in the same
 * order, each starting with "Udp:". */
static int mib4(const char *text, size_t len, struct udp_mib *out)
{
	const char *p = text, *end = text + len, *names = NULL, *line;
	size_t nlen = 0, n;
	int found = 0;

	while (next_line(&p, end, &line, &n)) {
		if (n < 4 || memcmp(line, "Udp:", 4) != 0)
			continue;
		if (!names) {
			names = line;
			nlen = n;
			continue;
		}
		for (unsigned i = 1;; i++) {
			size_t wl, vl;
			const char *w = word(names, nlen, i, &wl), *v = word(line, n, i, &vl);
			uint64_t *dst = NULL;

			if (!w || !v)
				break;
			if (wl == 12 && memcmp(w, "RcvbufErrors", 12) == 0)
				dst = &out->rcvbuf_errors;
			else if (wl == 12 && memcmp(w, "InCsumErrors", 12) == 0)
				dst = &out->csum_errors;
			if (dst && number(v, vl, dst) == 0)
				found++;
		}
		break;
	}
	return found == 2 ? 0 : -ENODATA;
}

/* /proc/net/snmp6: one "name value" a line. */
static int mib6(const char *text, size_t len, struct udp_mib *out)
{
	const char *p = text, *end = text + len, *line;
	size_t n;
	int found = 0;

	while (next_line(&p, end, &line, &n)) {
		size_t wl, vl;
		const char *w = word(line, n, 0, &wl), *v = word(line, n, 1, &vl);
		uint64_t *dst = NULL;

		if (!w || !v)
			continue;
		if (wl == 16 && memcmp(w, "Udp6RcvbufErrors", 16) == 0)
			dst = &out->rcvbuf_errors;
		else if (wl == 16 && memcmp(w, "Udp6InCsumErrors", 16) == 0)
			dst = &out->csum_errors;
		if (dst && number(v, vl, dst) == 0)
			found++;
	}
	return found == 2 ? 0 : -ENODATA;
}

int udp_mib_parse(int family, const char *text, size_t len, struct udp_mib *out)
{
	memset(out, 0, sizeof(*out));
	return family == AF_INET6 ? mib6(text, len, out) : mib4(text, len, out);
}

int udp_mib_read(int family, struct udp_mib *out)
{
	char buf[UDP_MIB_BUF];
	size_t used = 0;
	ssize_t n;
	int fd;

	fd = open(family == AF_INET6 ? "/proc/net/snmp6" : "/proc/net/snmp", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (used < sizeof(buf) && (n = read(fd, buf + used, sizeof(buf) - used)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			n = -errno;
			close(fd);
			return (int)n;
		}
		used += (size_t)n;
	}
	close(fd);
	return udp_mib_parse(family, buf, used, out);
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
