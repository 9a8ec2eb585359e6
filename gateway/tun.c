/*
 * TUN multi-queue device (see tun.h; Documentation/networking/tuntap.rst).
 */
#include "tun.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int tun_open(const char *name, unsigned n, bool vnet_hdr, int *fds)
{
	struct ifreq ifr;
	unsigned i;
	int rc;

	if (strlen(name) >= IFNAMSIZ)
		return -ENAMETOOLONG;
	if (if_nametoindex(name) != 0)
		return -EEXIST;
	for (i = 0; i < n; i++) {
		fds[i] = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
		if (fds[i] < 0) {
			rc = -errno;
			goto err;
		}
		memset(&ifr, 0, sizeof(ifr));
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
		ifr.ifr_flags = IFF_TUN | IFF_NO_PI | IFF_MULTI_QUEUE;
		if (vnet_hdr)
			ifr.ifr_flags |= IFF_VNET_HDR;
		if (ioctl(fds[i], TUNSETIFF, &ifr) < 0) {
			rc = -errno;
			close(fds[i]);
			goto err;
		}
	}
	return 0;
err:
	tun_close(fds, i);
	return rc;
}

void tun_close(int *fds, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
}

#ifndef TUN_F_USO4
#define TUN_F_USO4 0x20 /* Linux 6.2 */
#define TUN_F_USO6 0x40
#endif

int tun_offload(int fd)
{
	/* Each step down drops what an older kernel may not know; checksum offload alone
	 * still spares the sender's per-packet checksum. */
	static const int tries[] = {
		TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN | TUN_F_USO4 | TUN_F_USO6,
		TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN,
		TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6,
		TUN_F_CSUM,
	};

	for (size_t i = 0; i < sizeof(tries) / sizeof(tries[0]); i++)
		if (ioctl(fd, TUNSETOFFLOAD, (unsigned long)tries[i]) == 0)
			return tries[i];
	if (ioctl(fd, TUNSETOFFLOAD, 0ul) < 0)
		return -errno;
	return 0;
}

const char *tun_offload_names(int flags, char *buf, size_t len)
{
	static const struct {
		int flag;
		const char *name;
	} names[] = {
		{ TUN_F_CSUM, "csum" },	      { TUN_F_TSO4, "tso4" }, { TUN_F_TSO6, "tso6" },
		{ TUN_F_TSO_ECN, "tso_ecn" }, { TUN_F_USO4, "uso4" }, { TUN_F_USO6, "uso6" },
	};
	size_t used = 0;

	if (len)
		buf[0] = 0;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!(flags & names[i].flag))
			continue;
		int n = snprintf(buf + used, len - used, "%s%s", used ? "," : "", names[i].name);

		if (n < 0 || (size_t)n >= len - used)
			break;
		used += (size_t)n;
	}
	if (!used)
		snprintf(buf, len, "none");
	return buf;
}
