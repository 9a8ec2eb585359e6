/*
 * Lookups in a parsed topology and the namespace names derived from it (see topo_model.h).
 */
#include "topo_model.h"

#include <stdio.h>
#include <string.h>

#include "netns.h"

int topo_host_find(const struct topo *t, const char *name)
{
	for (int i = 0; i < t->nhosts; i++) {
		if (strcmp(t->hosts[i].name, name) == 0)
			return i;
	}
	return -1;
}

int topo_link_find(const struct topo *t, const char *name)
{
	for (int i = 0; i < t->nlinks; i++) {
		if (strcmp(t->links[i].name, name) == 0)
			return i;
	}
	return -1;
}

const struct topo_end *topo_end_find(const struct topo *t, int h, const char *ifname)
{
	for (int i = 0; i < t->nlinks; i++) {
		for (int e = 0; e < 2; e++) {
			const struct topo_end *end = &t->links[i].end[e];

			if (end->host == h && strcmp(end->ifname, ifname) == 0)
				return end;
		}
	}
	return NULL;
}

bool topo_prefix_valid(const char *p)
{
	size_t n = p ? strlen(p) : 0;

	return n > 0 && n < TOPO_PREFIX_LEN &&
	       strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == n;
}

const char *topo_netns_name(const char *prefix, const struct topo_host *h, char *buf)
{
	snprintf(buf, NETNS_NAME_MAX, "%s-%s", prefix, h->name);
	return buf;
}
