/*
 * Lookups in a topology and the names derived from it, shared by the parser, the validator,
 * the planner and the runner so that none of them calls into another for them. Pure: no I/O,
 * no allocation; any thread.
 */
#ifndef TUNBED_TOPO_MODEL_H
#define TUNBED_TOPO_MODEL_H

#include <stdbool.h>

#include "topo.h"

/* Index of the host called name, or -1. */
int topo_host_find(const struct topo *t, const char *name);

/* Index of the link called name, or -1. */
int topo_link_find(const struct topo *t, const char *name);

/* The link end of host h whose interface is ifname, or NULL. Ends must be resolved. */
const struct topo_end *topo_end_find(const struct topo *t, int h, const char *ifname);

/* True if p is a valid namespace prefix: 1 to 15 of [A-Za-z0-9_], no dash. */
bool topo_prefix_valid(const char *p);

/* Namespace name of host h under prefix: "<prefix>-<host>". buf holds NETNS_NAME_MAX. */
const char *topo_netns_name(const char *prefix, const struct topo_host *h, char *buf);

#endif
