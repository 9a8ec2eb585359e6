/*
 * The plan: topology to ordered kernel steps (see topo_plan.h).
 *
 * Order matters. Namespaces first; DAD off before any link exists, so that IPv6 addresses are
 * usable at once; links, then their features and addresses, then up; qdiscs on running links;
 * the user's sysctls once interfaces exist (they may name one); routes last, when every next
 * hop is reachable.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "netns.h"
#include "parse.h"
#include "topo_plan.h"
#include "topo_model.h"

static const char *const implicit_sysctls[][2] = {
	{ "net.ipv6.conf.all.accept_dad", "0" },
	{ "net.ipv6.conf.default.accept_dad", "0" },
};

struct builder {
	struct topo_plan *p;
	bool full;
};

static struct topo_step *add(struct builder *b, enum topo_step_kind kind, int line, int host)
{
	struct topo_step *s;

	if (b->p->nsteps >= TOPO_PLAN_MAX) {
		b->full = true;
		return NULL;
	}
	s = &b->p->steps[b->p->nsteps++];
	memset(s, 0, sizeof(*s));
	s->kind = kind;
	s->line = line;
	s->host = host;
	s->link = -1;
	s->end = -1;
	return s;
}

static void add_sysctl(struct builder *b, int line, int host, const char *name, const char *value)
{
	struct topo_step *s = add(b, TOPO_STEP_SYSCTL, line, host);

	if (s) {
		s->name = name;
		s->value = value;
	}
}

static struct topo_step *add_end(struct builder *b, enum topo_step_kind kind, int line,
				 const struct topo *t, int link, int end)
{
	struct topo_step *s = add(b, kind, line, t->links[link].end[end].host);

	if (s) {
		s->link = link;
		s->end = end;
	}
	return s;
}

static void add_features(struct builder *b, const struct topo *t, int li, int e)
{
	const struct topo_link *l = &t->links[li];
	struct topo_step *s;

	if (l->gro != TOPO_DEFAULT) {
		s = add_end(b, TOPO_STEP_FEATURE, l->line, t, li, e);
		if (s) {
			s->feature = TOPO_FEATURE_GRO;
			s->on = l->gro == TOPO_ON;
		}
	}
	if (l->tso != TOPO_DEFAULT) {
		s = add_end(b, TOPO_STEP_FEATURE, l->line, t, li, e);
		if (s) {
			s->feature = TOPO_FEATURE_TSO;
			s->on = l->tso == TOPO_ON;
		}
	}
}

int topo_plan_build(const struct topo *t, struct topo_plan *p)
{
	struct builder b = { .p = p };
	struct topo_step *s;

	p->nsteps = 0;
	for (int h = 0; h < t->nhosts; h++)
		add(&b, TOPO_STEP_NETNS, t->hosts[h].line, h);
	for (int h = 0; h < t->nhosts; h++) {
		add(&b, TOPO_STEP_LO_UP, 0, h);
		for (size_t i = 0; i < sizeof(implicit_sysctls) / sizeof(implicit_sysctls[0]); i++)
			add_sysctl(&b, 0, h, implicit_sysctls[i][0], implicit_sysctls[i][1]);
	}
	for (int i = 0; i < t->nlinks; i++) {
		const struct topo_link *l = &t->links[i];

		add_end(&b, TOPO_STEP_VETH, l->line, t, i, 0);
		for (int e = 0; e < 2; e++) {
			add_features(&b, t, i, e);
			for (int a = 0; a < l->end[e].naddrs; a++) {
				s = add_end(&b, TOPO_STEP_ADDR, l->end[e].addr_lines[a], t, i, e);
				if (s)
					s->index = a;
			}
		}
		for (int e = 0; e < 2; e++)
			add_end(&b, TOPO_STEP_LINK_UP, l->line, t, i, e);
		for (int e = 0; e < 2 && l->rate; e++)
			add_end(&b, TOPO_STEP_QDISC, l->rate_line, t, i, e);
	}
	for (int h = 0; h < t->nhosts; h++) {
		const struct topo_host *host = &t->hosts[h];

		/* New namespaces inherit IPv4 settings from the initial one: say it explicitly. */
		add_sysctl(&b, host->line, h, "net.ipv4.ip_forward", host->forward ? "1" : "0");
		add_sysctl(&b, host->line, h, "net.ipv6.conf.all.forwarding",
			   host->forward ? "1" : "0");
		for (int i = 0; i < host->nsysctls; i++)
			add_sysctl(&b, host->sysctls[i].line, h, host->sysctls[i].name,
				   host->sysctls[i].value);
	}
	for (int r = 0; r < t->nroutes; r++) {
		s = add(&b, TOPO_STEP_ROUTE, t->routes[r].line, t->routes[r].host);
		if (s)
			s->index = r;
	}
	return b.full ? -ENOSPC : 0;
}

void topo_link_tbf(const struct topo_link *l, uint32_t *burst, uint32_t *limit)
{
	uint64_t bytes_per_sec = l->rate / 8;
	uint64_t frame = (l->mtu ? l->mtu : 1500) + 64;
	uint64_t b = l->burst, q = l->limit;

	if (!b) {
		b = bytes_per_sec / 1000;
		if (b < TOPO_BURST_MIN)
			b = TOPO_BURST_MIN;
		if (b < frame)
			b = frame;
	}
	if (!q)
		q = b + bytes_per_sec / 100;
	*burst = b > UINT32_MAX ? UINT32_MAX : (uint32_t)b;
	*limit = q > UINT32_MAX ? UINT32_MAX : (uint32_t)q;
}

static const char *feature_name(enum topo_feature f)
{
	return f == TOPO_FEATURE_GRO ? "gro" : "tso";
}

void topo_step_describe(const struct topo *t, const char *prefix, const struct topo_step *s,
			char *buf, size_t size)
{
	char ns[NETNS_NAME_MAX], peer_ns[NETNS_NAME_MAX], a[NETPREFIX_STRLEN], v[NETADDR_STRLEN];
	char rate[32];
	const struct topo_link *l = s->link >= 0 ? &t->links[s->link] : NULL;
	const struct topo_end *end = l ? &l->end[s->end] : NULL;
	const struct topo_route *r;
	uint32_t burst, limit;
	int n;

	topo_netns_name(prefix, &t->hosts[s->host], ns);
	switch (s->kind) {
	case TOPO_STEP_NETNS:
		snprintf(buf, size, "ip netns add %s", ns);
		break;
	case TOPO_STEP_LO_UP:
		snprintf(buf, size, "ip -n %s link set lo up", ns);
		break;
	case TOPO_STEP_SYSCTL:
		snprintf(buf, size, "ip netns exec %s sysctl -w %s=%s", ns, s->name, s->value);
		break;
	case TOPO_STEP_VETH:
		topo_netns_name(prefix, &t->hosts[l->end[1].host], peer_ns);
		n = snprintf(buf, size, "ip -n %s link add %s", ns, l->end[0].ifname);
		if (n >= 0 && (size_t)n < size && l->mtu)
			n += snprintf(buf + n, size - (size_t)n, " mtu %u", l->mtu);
		if (n >= 0 && (size_t)n < size && l->queues)
			n += snprintf(buf + n, size - (size_t)n, " numtxqueues %u numrxqueues %u",
				      l->queues, l->queues);
		if (n >= 0 && (size_t)n < size)
			snprintf(buf + n, size - (size_t)n, " type veth peer name %s netns %s",
				 l->end[1].ifname, peer_ns);
		break;
	case TOPO_STEP_FEATURE:
		snprintf(buf, size, "ip netns exec %s ethtool -K %s %s %s", ns, end->ifname,
			 feature_name(s->feature), s->on ? "on" : "off");
		break;
	case TOPO_STEP_ADDR:
		snprintf(buf, size, "ip -n %s addr add %s dev %s", ns,
			 netaddr_format_prefix(&end->addrs[s->index], a), end->ifname);
		break;
	case TOPO_STEP_LINK_UP:
		snprintf(buf, size, "ip -n %s link set %s up", ns, end->ifname);
		break;
	case TOPO_STEP_QDISC:
		topo_link_tbf(l, &burst, &limit);
		format_rate(l->rate, rate, sizeof(rate));
		snprintf(buf, size,
			 "tc -n %s qdisc replace dev %s root tbf rate %s burst %u limit %u", ns,
			 end->ifname, rate, burst, limit);
		break;
	case TOPO_STEP_ROUTE:
		r = &t->routes[s->index];
		if (r->local) {
			snprintf(buf, size, "ip -n %s route add local %s dev lo", ns,
				 netaddr_format_prefix(&r->dst, a));
			break;
		}
		n = snprintf(buf, size, "ip -n %s route add %s", ns,
			     netaddr_format_prefix(&r->dst, a));
		if (n >= 0 && (size_t)n < size && r->has_via)
			n += snprintf(buf + n, size - (size_t)n, " via %s",
				      netaddr_format(&r->via, v));
		if (n >= 0 && (size_t)n < size && r->dev[0])
			n += snprintf(buf + n, size - (size_t)n, " dev %s", r->dev);
		if (n >= 0 && (size_t)n < size && r->mtu)
			snprintf(buf + n, size - (size_t)n, " mtu %u", r->mtu);
		break;
	}
}
