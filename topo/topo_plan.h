/*
 * The plan of a topology: the ordered kernel steps that `up` performs, each traced back to
 * the line of the file it comes from. `check` prints it; `up` executes it step by step.
 */
#ifndef TUNBED_TOPO_PLAN_H
#define TUNBED_TOPO_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "topo.h"

enum {
	/* Upper bound of steps for TOPO_MAX_* hosts, links, addresses, sysctls and routes. */
	TOPO_PLAN_MAX = TOPO_MAX_HOSTS * (4 + TOPO_MAX_SYSCTLS) +
			TOPO_MAX_LINKS * (1 + 2 * (4 + TOPO_MAX_ADDRS)) + TOPO_MAX_ROUTES,
};

enum topo_step_kind {
	TOPO_STEP_NETNS,   /* create the host's namespace */
	TOPO_STEP_LO_UP,   /* bring its loopback up */
	TOPO_STEP_SYSCTL,  /* write a net.* sysctl in the host */
	TOPO_STEP_VETH,	   /* create a link: both ends, each in its namespace */
	TOPO_STEP_FEATURE, /* GRO or TSO on or off on one end */
	TOPO_STEP_ADDR,	   /* add an address to one end */
	TOPO_STEP_LINK_UP, /* bring one end up */
	TOPO_STEP_QDISC,   /* tbf rate cap on one end's egress */
	TOPO_STEP_ROUTE,   /* add a route in the host */
};

enum topo_feature {
	TOPO_FEATURE_GRO,
	TOPO_FEATURE_TSO,
};

struct topo_step {
	enum topo_step_kind kind;
	int line; /* of the file entry behind the step; 0 for implicit steps */
	int host;
	int link, end;	   /* link steps */
	int index;	   /* address (ADDR) or route (ROUTE) index */
	const char *name;  /* sysctl name */
	const char *value; /* sysctl value */
	enum topo_feature feature;
	bool on;
};

struct topo_plan {
	int nsteps;
	struct topo_step steps[TOPO_PLAN_MAX];
};

/* Builds the plan of a validated topology. Pure. Returns 0 or -ENOSPC. */
int topo_plan_build(const struct topo *t, struct topo_plan *p);

/*
 * tbf parameters of a rate-capped link: the bucket (default 1 ms at the rate, at least
 * TOPO_BURST_MIN and one full frame) and the queue limit (default the bucket plus 10 ms at
 * the rate). Pure.
 */
void topo_link_tbf(const struct topo_link *l, uint32_t *burst, uint32_t *limit);

/*
 * Describes a step as the iproute2 command that would do the same ("ip -n tb-gwa addr add
 * 198.18.0.1/24 dev transit"), into buf. tunbed-topo never runs these: they are for people.
 */
void topo_step_describe(const struct topo *t, const char *prefix, const struct topo_step *s,
			char *buf, size_t size);

#endif
