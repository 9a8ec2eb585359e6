/*
 * GRE-in-UDP sockets (see udp.h; udp(7), Documentation/networking/segmentation-offloads.rst).
 */
#include "udp.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

static socklen_t sockaddr_of(int family, const uint8_t *addr, uint16_t port,
			     struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		memcpy(&s6->sin6_addr, addr, 16);
		return sizeof(*s6);
	}
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

	s4->sin_family = AF_INET;
	s4->sin_port = htons(port);
	memcpy(&s4->sin_addr, addr, 4);
	return sizeof(*s4);
}

int udp_rx_open(int family, const uint8_t *local, uint16_t port, bool gro)
{
	struct sockaddr_storage ss;
	socklen_t len = sockaddr_of(family, local, port, &ss);
	int fd, one = 1, rc, rcvbuf = UDP_RCVBUF;

	fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_UDP);
	if (fd < 0)
		return -errno;
	/* A bounded queue, larger than rmem_max allows: root may force it. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0 ||
	    (gro && setsockopt(fd, IPPROTO_UDP, UDP_GRO, &one, sizeof(one)) < 0) ||
	    bind(fd, (struct sockaddr *)&ss, len) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
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
	int fd, rc, one = 1;

	fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_UDP);
	if (fd < 0)
		return -errno;
	len = sockaddr_of(family, local, *sport, &ss);
	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&ss, len) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		goto err;
	*sport = ntohs(family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
					  : ((struct sockaddr_in *)&ss)->sin_port);
	len = sockaddr_of(family, remote, port, &ss);
	if (connect(fd, (struct sockaddr *)&ss, len) < 0)
		goto err;
	return fd;
err:
	rc = -errno;
	close(fd);
	return rc;
}

int udp_steer_by_inner_flow(int fd, unsigned gre_hlen, unsigned n)
{
	/* The program sees the UDP payload: the GRE header, then the inner packet at G. */
	const unsigned G = gre_hlen;
	struct sock_filter prog[] = {
		/* 0 */ BPF_STMT(BPF_LD | BPF_B | BPF_ABS, G),
		/* 1 */ BPF_STMT(BPF_ALU | BPF_RSH | BPF_K, 4),
		/* 2 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 6, 15, 0),
		/* IPv4: M0 = src ^ dst; ports when TCP or UDP (a later fragment has none). */
		/* 3 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, G + 12),
		/* 4 */ BPF_STMT(BPF_MISC | BPF_TAX, 0),
		/* 5 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, G + 16),
		/* 6 */ BPF_STMT(BPF_ALU | BPF_XOR | BPF_X, 0),
		/* 7 */ BPF_STMT(BPF_ST, 0),
		/* 8 */ BPF_STMT(BPF_LD | BPF_H | BPF_ABS, G + 6),
		/* 9 */ BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x3fff, 42, 0),
		/* 10 */ BPF_STMT(BPF_LD | BPF_B | BPF_ABS, G + 9),
		/* 11 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 6, 1, 0),
		/* 12 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 17, 0, 39),
		/* 13 */ BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, G),
		/* 14 */ BPF_STMT(BPF_LD | BPF_H | BPF_IND, G),
		/* 15 */ BPF_STMT(BPF_ST, 1),
		/* 16 */ BPF_STMT(BPF_LD | BPF_H | BPF_IND, G + 2),
		/* 17 */ BPF_STMT(BPF_JMP | BPF_JA, 29),
		/* IPv6: M0 = the XOR of the eight address words; ports when TCP or UDP follow
		 * the fixed header. */
		/* 18 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, G + 8),
		/* 19 */ BPF_STMT(BPF_MISC | BPF_TAX, 0),
		/* 20 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, G + 12),
		/* 21 */ BPF_STMT(BPF_ALU | BPF_XOR | BPF_X, 0),
		/* 22 */ BPF_STMT(BPF_MISC | BPF_TAX, 0),
		/* 23 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, G + 16),
		/* 24 */ BPF_STMT(BPF_ALU | BPF_XOR | BPF_X, 0),
		/* 25 */ BPF_STMT(BPF_MISC | BPF_TAX, 0),
		/* 26 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, G + 20),
		/* 27 */ BPF_STMT(BPF_ALU | BPF_XOR | BPF_X, 0),
		/* 28 */ BPF_STMT(BPF_MISC | BPF_TAX, 0),
		/* 29 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, G + 24),
		/* 30 */ BPF_STMT(BPF_ALU | BPF_XOR | BPF_X, 0),
		/* 31 */ BPF_STMT(BPF_MISC | BPF_TAX, 0),
		/* 32 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, G + 28),
		/* 33 */ BPF_STMT(BPF_ALU | BPF_XOR | BPF_X, 0),
		/* 34 */ BPF_STMT(BPF_MISC | BPF_TAX, 0),
		/* 35 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, G + 32),
		/* 36 */ BPF_STMT(BPF_ALU | BPF_XOR | BPF_X, 0),
		/* 37 */ BPF_STMT(BPF_MISC | BPF_TAX, 0),
		/* 38 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, G + 36),
		/* 39 */ BPF_STMT(BPF_ALU | BPF_XOR | BPF_X, 0),
		/* 40 */ BPF_STMT(BPF_ST, 0),
		/* 41 */ BPF_STMT(BPF_LD | BPF_B | BPF_ABS, G + 6),
		/* 42 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 6, 1, 0),
		/* 43 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 17, 0, 8),
		/* 44 */ BPF_STMT(BPF_LD | BPF_H | BPF_ABS, G + 40),
		/* 45 */ BPF_STMT(BPF_ST, 1),
		/* 46 */ BPF_STMT(BPF_LD | BPF_H | BPF_ABS, G + 42),
		/* Both: A = sport ^ dport ^ M0 (M1 holds sport). */
		/* 47 */ BPF_STMT(BPF_LDX | BPF_MEM, 1),
		/* 48 */ BPF_STMT(BPF_ALU | BPF_XOR | BPF_X, 0),
		/* 49 */ BPF_STMT(BPF_LDX | BPF_MEM, 0),
		/* 50 */ BPF_STMT(BPF_ALU | BPF_XOR | BPF_X, 0),
		/* 51 */ BPF_STMT(BPF_ST, 0),
		/* Mix (Fibonacci hashing: the low bits of ports that connect() keeps even must
		 * count too) and take the middle bits modulo the number of sockets. */
		/* 52 */ BPF_STMT(BPF_LD | BPF_MEM, 0),
		/* 53 */ BPF_STMT(BPF_ALU | BPF_MUL | BPF_K, 0x9e3779b1u),
		/* 54 */ BPF_STMT(BPF_ALU | BPF_RSH | BPF_K, 16),
		/* 55 */ BPF_STMT(BPF_ALU | BPF_MOD | BPF_K, n),
		/* 56 */ BPF_STMT(BPF_RET | BPF_A, 0),
	};
	struct sock_fprog fprog = { .len = sizeof(prog) / sizeof(prog[0]), .filter = prog };

	if (n == 0)
		return -EINVAL;
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &fprog, sizeof(fprog)) < 0)
		return -errno;
	return 0;
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
