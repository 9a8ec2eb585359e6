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

int tun_open(const char *name, unsigned n, int *fds)
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
