/*
 * What tunbed-traffic keeps of its privileges: nothing (docs/traffic.md, "Privileges"). It
 * needs none to run a test; started as root, the server binds its port first (one below
 * net.ipv4.ip_unprivileged_port_start takes CAP_NET_BIND_SERVICE), and then both drop every
 * capability and set NoNewPrivs. One exception: a client asked for a congestion control the
 * kernel restricts (not in net.ipv4.tcp_allowed_congestion_control) keeps CAP_NET_ADMIN,
 * which choosing it per socket takes, and nothing else.
 */
#ifndef TUNBED_TR_TRAFFIC_PRIVS_H
#define TUNBED_TR_TRAFFIC_PRIVS_H

#include <stdint.h>

/*
 * Drops every capability but those of keep (1ull << CAP_...: kept in the effective,
 * permitted and bounding sets; inheritable and ambient emptied) and sets NoNewPrivs, for
 * good (common/privs.h, privs_drop). Capabilities are a thread's: call it from the main thread
 * before any other thread starts (they inherit its set), once whatever needs privilege is
 * done. Returns 0, or -errno after logging one line.
 */
int traffic_privs_drop(uint64_t keep);

/* The capability bit (1ull << CAP_...) to keep for --congestion name: CAP_NET_ADMIN when the
 * kernel allows name to privileged processes only, else 0 (none asked, or allowed to all). */
uint64_t traffic_privs_for_congestion(const char *name);

#endif
