/*
 * Which links tunbed-framebench may use (see testlink.h): the driver by the ethtool ioctl
 * (include/uapi/linux/ethtool.h), the namespace by its nsfs inode.
 */
#include "testlink.h"

#include <errno.h>
#include <limits.h> /* INT_MAX, which linux/ethtool.h uses without including it */
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

/* The driver of dev into info: tun says "tap" as its bus for a TAP, "tun" for a TUN. */
static int drvinfo(const char *dev, struct ethtool_drvinfo *info)
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc = 0;

	if (fd < 0)
		return -errno;
	memset(info, 0, sizeof(*info));
	info->cmd = ETHTOOL_GDRVINFO;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", dev);
	ifr.ifr_data = (char *)info;
	if (ioctl(fd, SIOCETHTOOL, &ifr) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

/*
 * 1 if the calling thread's network namespace is the initial one, 0 if not, or -errno. The
 * initial one is PID 1's; where PID 1 cannot be looked at (a sandbox can deny it to root),
 * kthreadd's, PID 2, which as every kernel thread lives in it.
 */
static int in_initial_netns(void)
{
	struct stat self, init;
	char comm[16] = "";
	FILE *f;

	if (stat("/proc/thread-self/ns/net", &self) < 0)
		return -errno;
	if (stat("/proc/1/ns/net", &init) < 0) {
		int rc = -errno;

		f = fopen("/proc/2/comm", "re");
		if (!f)
			return rc;
		if (!fgets(comm, sizeof(comm), f) || strcmp(comm, "kthreadd\n") != 0 ||
		    stat("/proc/2/ns/net", &init) < 0) {
			fclose(f);
			return rc;
		}
		fclose(f);
	}
	return self.st_dev == init.st_dev && self.st_ino == init.st_ino;
}

int testlink_check(const char *dev, bool any)
{
	struct ethtool_drvinfo info;
	enum testlink_kind kind = TESTLINK_OTHER;
	int rc = drvinfo(dev, &info), initial;

	/* A device with nothing to say (the loopback) is no test link either. */
	if (rc == -EOPNOTSUPP)
		snprintf(info.driver, sizeof(info.driver), "none");
	else if (rc) {
		log_warnx("cannot tell what %s is: %s", dev, strerror(-rc));
		return rc;
	}
	info.driver[sizeof(info.driver) - 1] = info.bus_info[sizeof(info.bus_info) - 1] = '\0';
	if (strcmp(info.driver, "veth") == 0)
		kind = TESTLINK_VETH;
	else if (strcmp(info.driver, "tun") == 0 && strcmp(info.bus_info, "tap") == 0)
		kind = TESTLINK_TAP;
	if (any)
		return (int)kind;
	if (kind == TESTLINK_OTHER) {
		log_warnx("%s is not a veth or TAP device (driver %s): tunbed-framebench uses "
			  "only a test's link (--any-interface allows it)",
			  dev, info.driver);
		return -EPERM;
	}
	initial = in_initial_netns();
	if (initial) {
		log_warnx("%s is in the initial network namespace%s%s: tunbed-framebench uses only "
			  "a link in a test's namespace (--any-interface allows it)",
			  dev, initial < 0 ? ", or cannot be told apart from it: " : "",
			  initial < 0 ? strerror(-initial) : "");
		return -EPERM;
	}
	return (int)kind;
}
