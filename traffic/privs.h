/*
 * What tunbed-traffic keeps of its privileges: nothing (docs/traffic.md, "Privileges"). It
 * needs none to run a test; started as root, the server binds its port first (one below
 * net.ipv4.ip_unprivileged_port_start takes CAP_NET_BIND_SERVICE), and then both drop every
 * capability and set NoNewPrivs.
 */
#ifndef TUNBED_TR_PRIVS_H
#define TUNBED_TR_PRIVS_H

/*
 * Drops every capability (effective, permitted, inheritable and ambient, and the bounding
 * set when CAP_SETPCAP is there to drop it) and sets NoNewPrivs, for good. Capabilities are
 * a thread's: call it from the main thread before any other thread starts (they inherit its
 * set), once whatever needs privilege is done. Returns 0, or -errno after logging one line.
 */
int privs_drop(void);

#endif
