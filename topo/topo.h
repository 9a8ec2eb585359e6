/*
 * A gateway test topology: hosts (network namespaces), links (veth pairs) and routes, as
 * parsed from a topology file (docs/topology.md). The structure is plain data, filled by
 * topo_parse_syntax and checked by topo_validate (topo_parse runs both); nothing here touches
 * the kernel. Lookups in it are in topo_model.h.
 */
#ifndef TUNBED_TOPO_H
#define TUNBED_TOPO_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "line_error.h"
#include "netaddr.h"

enum topo_limits {
	TOPO_MAX_HOSTS = 32,   /* a gateway test needs 2 to 8 hosts; chains need a few more */
	TOPO_MAX_LINKS = 64,   /* two per host leaves room for rings and active/passive pairs */
	TOPO_MAX_ROUTES = 256, /* across the whole file */
	TOPO_MAX_ADDRS = 8,    /* per link end: one or two of each family in practice */
	TOPO_MAX_SYSCTLS = 32, /* per host, including those that forward = yes implies */
	TOPO_NAME_LEN = 32,    /* host and topology names, with the NUL */
	TOPO_IFNAME_LEN = 16,  /* IFNAMSIZ: link names become interface names */
	TOPO_PREFIX_LEN = 16,  /* namespace prefix, with the NUL */
	TOPO_SYSCTL_NAME_LEN = 128, /* longest net.* sysctl path is under 80 */
	TOPO_SYSCTL_VALUE_LEN = 64,
	TOPO_FILE_MAX = 1 << 20, /* a bigger topology file is refused before parsing */
	TOPO_LINE_MAX = 200,	 /* libinih's line buffer as Debian builds it */
	TOPO_MTU_MIN = 68,	 /* RFC 791 minimum for IPv4 */
	TOPO_MTU_MIN6 = 1280,	 /* RFC 8200: below this the kernel turns IPv6 off */
	TOPO_MTU_MAX = 65535,	 /* veth's max_mtu (ETH_MAX_MTU) */
	TOPO_MAX_QUEUES = 64,	 /* veth accepts up to 4096; more than CPUs is pointless */
	TOPO_BURST_MIN = 16384,	 /* default tbf bucket never below this many bytes */
};

/* libnl's tbf takes the rate in bytes/s as a 32-bit value: 2^32 - 1 B/s is about 34 Gbit/s. */
#define TOPO_RATE_MAX_BPS (32ull * 1000 * 1000 * 1000)

enum topo_tristate {
	TOPO_DEFAULT = 0, /* leave the kernel's setting */
	TOPO_ON,
	TOPO_OFF,
};

struct topo_sysctl {
	char name[TOPO_SYSCTL_NAME_LEN]; /* dotted: net.ipv4.ip_forward */
	char value[TOPO_SYSCTL_VALUE_LEN];
	int line;
};

struct topo_host {
	char name[TOPO_NAME_LEN];
	int line;
	bool has_cpus;
	cpu_set_t cpus; /* for pinning what runs on the host; tunbed-topo only reports it */
	bool forward;
	int nsysctls;
	struct topo_sysctl sysctls[TOPO_MAX_SYSCTLS];
};

struct topo_end {
	int host; /* index into topo.hosts, -1 until resolved */
	char host_name[TOPO_NAME_LEN];
	int line; /* of the "a =" or "b =" key */
	char ifname[TOPO_IFNAME_LEN];
	int naddrs;
	struct netprefix addrs[TOPO_MAX_ADDRS];
	int addr_lines[TOPO_MAX_ADDRS];
};

struct topo_link {
	char name[TOPO_IFNAME_LEN];
	int line;
	struct topo_end end[2];
	unsigned mtu;	 /* 0: the kernel's default (1500) */
	unsigned queues; /* 0: one tx and one rx queue */
	uint64_t rate;	 /* bit/s, 0: no cap */
	uint64_t burst;	 /* bytes, 0: derived from the rate */
	uint64_t limit;	 /* bytes, 0: derived from the rate */
	enum topo_tristate gro, tso;
	int rate_line;
};

struct topo_route {
	int host;
	int line;
	bool local; /* "local DEST": the host answers for every address of DEST (AnyIP) */
	struct netprefix dst;
	bool has_via;
	struct netaddr via;
	char dev[TOPO_IFNAME_LEN]; /* empty: chosen by the kernel from via */
	unsigned mtu;		   /* 0: the link's */
	char text[TOPO_LINE_MAX];  /* as written, for messages */
};

struct topo {
	char name[TOPO_NAME_LEN];
	char prefix[TOPO_PREFIX_LEN];
	int nhosts, nlinks, nroutes;
	struct topo_host hosts[TOPO_MAX_HOSTS];
	struct topo_link links[TOPO_MAX_LINKS];
	struct topo_route routes[TOPO_MAX_ROUTES];
};

#define TOPO_DEFAULT_PREFIX "tb"

/*
 * Parses a topology file held in memory (need not be NUL-terminated) into *t and validates
 * it: topo_parse_syntax, then topo_validate. Pure: no I/O, no allocation. Returns 0, or
 * -EINVAL with *err set to the first problem found.
 */
int topo_parse(const char *text, size_t len, struct topo *t, struct line_error *err);

/*
 * Reads path (at most TOPO_FILE_MAX bytes) and parses it. Returns 0, -errno of the read with
 * err->line 0, or -EINVAL from the parser. *t must be zeroable memory (it is large).
 */
int topo_load(const char *path, struct topo *t, struct line_error *err);

/*
 * The file's syntax alone (topo_parse.c): sections, keys and values into *t, with link ends
 * not yet resolved to hosts. Pure. Returns 0, or -EINVAL with *err set. topo_parse then calls
 * topo_validate; use topo_parse unless the cross-checks are to be left out.
 */
int topo_parse_syntax(const char *text, size_t len, struct topo *t, struct line_error *err);

/*
 * Cross-checks a parsed topology: every link end on a defined host, interface names unique
 * per host, addresses unique, MTUs fit the families, routes name a reachable next hop or a
 * link of their host. Returns 0 or -EINVAL with *err set. Called by topo_parse, after
 * topo_parse_syntax.
 */
int topo_validate(struct topo *t, struct line_error *err);

/* Lookups and namespace names: topo_model.h. */

#endif
