/*
 * gregw's tunnel table on the control thread (docs/gregw.md, "Many tunnels"): the tunnels at
 * start (a tunnel file's, or the one of --remote), published to the workers (tunnels_pub.h);
 * a change through the control socket (add, remove, replace) checked as the file's tunnels
 * are and published whole; the tunnels' counters listed a page at a time.
 */
#ifndef TUNBED_GW_TUNCTL_H
#define TUNBED_GW_TUNCTL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "tunfile.h"
#include "tunnels_pub.h"

/* A change kept while the workers hold the tables, for tunctl_retry. */
struct tunctl_wait {
	uint64_t id;	   /* its client's connection (ctl.h), for the reply */
	uint64_t since_ns; /* CLOCK_MONOTONIC: when it came */
	enum tunfile_change ch;
	struct tunnel_spec s; /* the tunnel (for remove, its name alone) */
};

/* A change made, its reply held until the workers' passes put it in effect. */
struct tunctl_effect {
	uint64_t id;	   /* its client's connection, for the reply */
	uint64_t gen;	   /* the table that made it */
	uint64_t since_ns; /* CLOCK_MONOTONIC: when it was made */
	enum tunfile_change ch;
	char name[TUNNEL_NAME_LEN];
	json_t *reply; /* {"changed": ...}, ours until given */
};

struct tunctl {
	struct tunnels_pub *pub;
	struct tunnel_spec *specs; /* the tunnels in force, sorted by name */
	unsigned n, cap;
	bool from_file;	       /* --tunnels: changeable; else --remote's one tunnel */
	bool any_address;      /* a change may use addresses outside the benchmarking ranges */
	unsigned gre_flags;    /* every tunnel's GRE flags at start together: the MTU's room */
	struct netaddr peer;   /* the first (config.h): the outer family's */
	bool udp;	       /* their one encapsulation */
	bool tap;	       /* superpackets go whole through the TAP (tx_tap.h), of the tunnels
				* it takes: set by gregw once the send transport is chosen */
	unsigned changes;      /* changes made through the control socket */
	unsigned busy_retries; /* publications tried while the workers held the tables */
	unsigned rebuilds;     /* changes made by building the whole table (nested prefixes) */
	struct tunctl_wait wait[TUNCTL_WAIT_MAX]; /* kept changes, a ring, oldest at wait_head */
	unsigned wait_head, nwait;
	/* Changes made, not yet in effect, by generation, a ring: each holds a replaced table
	 * back (the one before it), so there are never more than those. */
	struct tunctl_effect effect[TUNNELS_RETIRED_MAX];
	unsigned effect_head, neffect;
	unsigned effect_waits; /* changes whose reply waited for a worker's pass */
};

/* The default and largest page of the tunnels command. */
enum { TUNCTL_PAGE = 64, TUNCTL_PAGE_MAX = 1024 };

/*
 * The tunnels at start: c's tunnel file's (c->tunnels), else one tunnel named "remote" of
 * --remote, --key, --seq, --csum and --encap, which takes every inner destination (0.0.0.0/0
 * and ::/0) and whose inner sources are --allow-from's or --route's (encap_cfg.tunnel_sources
 * off). Returns 0 or -ENOMEM. Main thread.
 */
int tunctl_init(struct tunctl *t, const struct config *c);

/* Publishes the tunnels to the workers through pub, which t then keeps (tunnels_pub_init
 * done). Returns 0 or tunnels_pub_set's -errno. Main thread, before the workers start. */
int tunctl_publish(struct tunctl *t, struct tunnels_pub *pub);

/* Frees the list and the replies not given; the publication is its owner's
 * (tunnels_pub_fini). */
void tunctl_fini(struct tunctl *t);

/* Routes every tunnel's prefixes into ifindex (a tunnel file's; the one tunnel of --remote
 * routes what --route says). Returns 0 or -errno after one line naming the prefix. */
int tunctl_route(const struct tunctl *t, int ifindex);

/* Whether a tunnel of the file has an IPv6 prefix (its TUN device then needs IPv6). */
bool tunctl_has_inner6(const struct tunctl *t);

/*
 * The reply to a control command line of len bytes that names the tunnels, or NULL when it
 * names none: "tunnels [FROM [COUNT]]" (tunnels FROM to FROM + COUNT - 1 in the order of
 * their names, with their counters; COUNT default TUNCTL_PAGE, at most TUNCTL_PAGE_MAX),
 * "add NAME KEYS", "replace NAME KEYS" (KEYS: a tunnel section's lines, separated by ';'),
 * "remove NAME". A change that breaks a rule, or that gregw cannot make, answers
 * {"error": MESSAGE} and changes nothing. A change made is answered once it is in effect:
 * every worker has left the pass it was in when the change was published, if it was in one
 * (tunnels_pub_settled), so that the next packet any worker takes goes by it. That is at
 * once when no worker is in a pass (an idle one sleeps outside any); otherwise the reply is
 * held: NULL, *later set, and tunctl_retry gives it under id (the client's connection). A
 * change that must wait for the workers' passes before it can be made (the tables they
 * hold: tunnels_pub_set's -EBUSY), or behind a change that waits so, is kept: NULL, *later,
 * and tunctl_retry makes it. *handled: whether the line was one of these. now_ns:
 * CLOCK_MONOTONIC. Main thread.
 */
json_t *tunctl_command(struct tunctl *t, const char *cmd, size_t len, uint64_t id, uint64_t now_ns,
		       bool *handled, bool *later);

/* The reply to a kept change: reply (done's to free) for the client's connection id. */
typedef void tunctl_done_fn(void *arg, uint64_t id, json_t *reply);

/*
 * Gives the replies of the changes now in effect, in the order they were made, and tries the
 * kept changes again in the order they came, as far as the workers' passes allow: each made
 * (answered when in effect), refused (by the rules, against the tunnels it now meets) or kept
 * TUNCTL_WAIT_MS in vain (refused, "Device or resource busy") is answered through done. A
 * change made and not in effect after TUNCTL_WAIT_MS is answered with an error that says it
 * was made and names the worker still in its pass. Returns how many replies still wait:
 * call it again within TUNCTL_RETRY_US. Main thread.
 */
unsigned tunctl_retry(struct tunctl *t, uint64_t now_ns, tunctl_done_fn *done, void *arg);

/* What the stats say of the table, the same size whatever the tunnels: their number, the
 * table's generation, the changes made, how many of them waited for a publication or for
 * a worker's pass, and how many were made by building the whole table. NULL if out of memory.
 * Main thread. */
json_t *tunctl_summary(const struct tunctl *t);

#endif
