/*
 * Cross-checks of a parsed topology: what no single line can tell on its own. It looks
 * hosts and interfaces up through topo_model.h and never calls into the parser.
 */
#include <errno.h>
#include <sys/socket.h>
#include <stdio.h>
#include <string.h>

#include "topo.h"
#include "topo_model.h"

static int check_ends(struct topo *t, struct topo_link *l, struct line_error *err)
{
	for (int e = 0; e < 2; e++) {
		struct topo_end *end = &l->end[e];

		if (!end->host_name[0])
			return line_error_set(err, -EINVAL, l->line,
					      "link '%s' has no end %c: add '%c = HOST'", l->name,
					      'a' + e, 'a' + e);
		end->host = topo_host_find(t, end->host_name);
		if (end->host < 0)
			return line_error_set(err, -EINVAL, end->line,
					      "link '%s': end %c is on undefined host '%s'",
					      l->name, 'a' + e, end->host_name);
	}
	if (l->end[0].host == l->end[1].host)
		return line_error_set(err, -EINVAL, l->end[1].line,
				      "link '%s' joins host '%s' to itself", l->name,
				      l->end[0].host_name);
	return 0;
}

/* Two links of one host may not give their interfaces the same name. */
static int check_ifnames(const struct topo *t, struct line_error *err)
{
	for (int x = 0; x < t->nlinks * 2; x++) {
		const struct topo_link *l = &t->links[x / 2];
		const struct topo_end *ex = &l->end[x % 2];

		for (int y = 0; y < x; y++) {
			const struct topo_end *ey = &t->links[y / 2].end[y % 2];

			if (ey->host == ex->host && strcmp(ey->ifname, ex->ifname) == 0)
				return line_error_set(
					err, -EINVAL, l->line,
					"link '%s': host '%s' already has an interface '%s' "
					"(link '%s')",
					l->name, ex->host_name, ex->ifname, t->links[y / 2].name);
		}
	}
	return 0;
}

/* Address number i of the whole file in link, end, address order, or NULL for a gap. */
static const struct netprefix *addr_at(const struct topo *t, int i, int *line, int *link)
{
	const struct topo_end *end =
		&t->links[i / (2 * TOPO_MAX_ADDRS)].end[i / TOPO_MAX_ADDRS % 2];
	int k = i % TOPO_MAX_ADDRS;

	if (k >= end->naddrs)
		return NULL;
	*line = end->addr_lines[k];
	*link = i / (2 * TOPO_MAX_ADDRS);
	return &end->addrs[k];
}

static int check_addrs(const struct topo *t, struct line_error *err)
{
	int n = t->nlinks * 2 * TOPO_MAX_ADDRS, lx, ly, kx, ky;
	char a[NETPREFIX_STRLEN];

	for (int x = 0; x < n; x++) {
		const struct netprefix *px = addr_at(t, x, &lx, &kx);
		const struct topo_link *l;
		unsigned mtu;

		if (!px)
			continue;
		l = &t->links[kx];
		mtu = l->mtu ? l->mtu : 1500;
		if (px->addr.family == AF_INET6 && mtu < TOPO_MTU_MIN6)
			return line_error_set(
				err, -EINVAL, lx,
				"link '%s': IPv6 address %s needs mtu %d or more, not %u", l->name,
				netaddr_format_prefix(px, a), TOPO_MTU_MIN6, mtu);
		/* The same address on two interfaces sends replies astray. */
		for (int y = 0; y < x; y++) {
			const struct netprefix *py = addr_at(t, y, &ly, &ky);

			if (py && netaddr_equal(&px->addr, &py->addr))
				return line_error_set(
					err, -EINVAL, lx,
					"address %s is already on link '%s' (line %d)",
					netaddr_format_prefix(px, a), t->links[ky].name, ly);
		}
	}
	return 0;
}

/* True if addr lies in a connected prefix of end (and is not that end's own address). */
static bool end_reaches(const struct topo_end *end, const struct netaddr *addr)
{
	for (int i = 0; i < end->naddrs; i++) {
		if (netaddr_equal(&end->addrs[i].addr, addr))
			return false;
	}
	for (int i = 0; i < end->naddrs; i++) {
		if (netaddr_in_prefix(addr, &end->addrs[i]))
			return true;
	}
	return false;
}

static int check_route(const struct topo *t, int ri, struct line_error *err)
{
	const struct topo_route *r = &t->routes[ri];
	const struct topo_host *h = &t->hosts[r->host];
	const struct topo_end *dev = NULL;
	char a[NETADDR_STRLEN];
	bool reached = false;

	for (int j = 0; j < ri; j++) {
		const struct topo_route *o = &t->routes[j];

		if (o->host == r->host && o->dst.len == r->dst.len &&
		    netaddr_equal(&o->dst.addr, &r->dst.addr))
			return line_error_set(
				err, -EINVAL, r->line,
				"route '%s' on host '%s': same destination as line %d", r->text,
				h->name, o->line);
	}
	if (r->local)
		return 0;
	if (r->dev[0]) {
		dev = topo_end_find(t, r->host, r->dev);
		if (!dev)
			return line_error_set(err, -EINVAL, r->line,
					      "route '%s': host '%s' has no interface '%s'",
					      r->text, h->name, r->dev);
	}
	if (!r->has_via)
		return 0;
	for (int i = 0; i < t->nlinks && !reached; i++) {
		for (int e = 0; e < 2 && !reached; e++) {
			const struct topo_end *end = &t->links[i].end[e];

			if (end->host != r->host || (dev && end != dev))
				continue;
			reached = end_reaches(end, &r->via);
		}
	}
	if (!reached)
		return line_error_set(
			err, -EINVAL, r->line,
			"route '%s' on host '%s': next hop %s is not on any of its links%s",
			r->text, h->name, netaddr_format(&r->via, a),
			dev ? " (or not on the one named)" : "");
	return 0;
}

int topo_validate(struct topo *t, struct line_error *err)
{
	int rc;

	memset(err, 0, sizeof(*err));
	for (int i = 0; i < t->nlinks; i++) {
		rc = check_ends(t, &t->links[i], err);
		if (rc)
			return rc;
	}
	rc = check_ifnames(t, err);
	if (!rc)
		rc = check_addrs(t, err);
	if (rc)
		return rc;
	for (int i = 0; i < t->nroutes; i++) {
		rc = check_route(t, i, err);
		if (rc)
			return rc;
	}
	return 0;
}
