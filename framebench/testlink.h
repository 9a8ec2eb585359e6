/*
 * The links tunbed-framebench may use: a veth or a TAP inside a network namespace other than
 * the initial one, a test's link, unless the user says otherwise (--any-interface). Frames at
 * full rate on a host's own interface, or an XDP program that takes every frame of its first
 * queue, are never what a test meant.
 */
#ifndef TUNBED_FB_TESTLINK_H
#define TUNBED_FB_TESTLINK_H

#include <stdbool.h>

enum testlink_kind {
	TESTLINK_OTHER, /* any other driver, or one that does not say */
	TESTLINK_VETH,
	TESTLINK_TAP, /* the tun driver's TAP: an Ethernet device written from userspace */
};

/*
 * Reads the kind of the interface dev (its driver, by ETHTOOL_GDRVINFO) and, unless any,
 * checks that it is a veth or TAP in a namespace other than the initial one (PID 1's).
 * Returns the kind, or -EPERM after one line saying why it is refused (which names
 * --any-interface), or another -errno after one line. Main thread, setup only.
 */
int testlink_check(const char *dev, bool any);

#endif
