/*
 * Bringing a topology up and taking it down. Everything `up` makes lives inside the
 * namespaces it creates (veth ends are created straight in them), so removing the namespaces
 * removes everything: that is how a failed `up` is undone and what `down` does.
 */
#ifndef TUNBED_TOPO_RUN_H
#define TUNBED_TOPO_RUN_H

#include <signal.h>
#include <stdbool.h>

#include "netns.h"
#include "topo.h"
#include "topo_plan.h"

struct topo_up_opts {
	const char *prefix;
	bool replace; /* remove existing namespaces of the same names first */
	int fail_at;  /* tests only: step number (1-based) made to fail, or 0 */
	volatile sig_atomic_t *interrupted; /* checked between steps; may be NULL */
};

/*
 * Executes plan p of topology t. On failure removes every namespace it created and returns
 * -errno with *err naming the step, its line and the kernel's reason: -EEXIST if a namespace
 * exists and replace is off, -EINTR if interrupted.
 */
int topo_up(const struct topo *t, const struct topo_plan *p, const struct topo_up_opts *o,
	    struct line_error *err);

/* Names of namespaces removed by a down call. */
struct topo_removed {
	int count;
	char names[TOPO_MAX_HOSTS * 8][NETNS_NAME_MAX];
};

/*
 * Removes the namespaces of t's hosts under prefix that exist, and the control sockets that
 * gregws killed in them left in /run/gregw (NETNS.*.sock that nobody answers, also in the
 * directories of --users there). Warns (log)
 * about processes still inside one: the namespace lives on until they exit. Returns 0 or the
 * first -errno.
 */
int topo_down(const struct topo *t, const char *prefix, struct topo_removed *out);

/* Removes every namespace named "<prefix>-*", also those of a crashed or unknown run, and
 * the stale gregw control sockets /run/gregw/[USER/]<prefix>-*.sock. */
int topo_down_prefix(const char *prefix, struct topo_removed *out);

#endif
