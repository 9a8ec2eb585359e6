/*
 * `show`: read a topology back from the kernel with libnl caches (see topo_show.h).
 */
#include "topo_show.h"

#include <errno.h>
#include <linux/if.h>
#include <linux/rtnetlink.h>
#include <netlink/cache.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/qdisc.h>
#include <netlink/route/qdisc/tbf.h>
#include <netlink/route/route.h>
#include <netlink/route/tc.h>
#include <string.h>

#include "jout.h"
#include "kernel.h"
#include "netns.h"
#include "parse.h"
#include "topo_model.h"

struct caches {
	struct nl_cache *links, *addrs, *routes, *qdiscs;
};

static void caches_free(struct caches *c)
{
	if (c->links)
		nl_cache_free(c->links);
	if (c->addrs)
		nl_cache_free(c->addrs);
	if (c->routes)
		nl_cache_free(c->routes);
	if (c->qdiscs)
		nl_cache_free(c->qdiscs);
}

static int caches_fill(struct kernel_host *h, struct caches *c)
{
	int rc;

	memset(c, 0, sizeof(*c));
	rc = rtnl_link_alloc_cache(h->sk, AF_UNSPEC, &c->links);
	if (!rc)
		rc = rtnl_addr_alloc_cache(h->sk, &c->addrs);
	if (!rc)
		rc = rtnl_route_alloc_cache(h->sk, AF_UNSPEC, 0, &c->routes);
	if (!rc)
		rc = rtnl_qdisc_alloc_cache(h->sk, &c->qdiscs);
	if (rc)
		caches_free(c);
	return kernel_nlerr(rc);
}

static json_t *prefix_json(struct nl_addr *a)
{
	struct netprefix p = { .len = nl_addr_get_prefixlen(a) };
	char buf[NETPREFIX_STRLEN];
	unsigned n = nl_addr_get_len(a);

	p.addr.family = nl_addr_get_family(a);
	if (n != netaddr_len(p.addr.family))
		return json_null();
	memcpy(p.addr.bytes, nl_addr_get_binary_addr(a), n);
	return json_string(netaddr_format_prefix(&p, buf));
}

static json_t *addr_json(struct nl_addr *a)
{
	struct netaddr x = { .family = nl_addr_get_family(a) };
	char buf[NETADDR_STRLEN];
	unsigned n = nl_addr_get_len(a);

	if (n != netaddr_len(x.family))
		return json_null();
	memcpy(x.bytes, nl_addr_get_binary_addr(a), n);
	return json_string(netaddr_format(&x, buf));
}

static json_t *qdisc_json(struct caches *c, int ifindex)
{
	struct rtnl_qdisc *q = rtnl_qdisc_get_by_parent(c->qdiscs, ifindex, TC_H_ROOT);
	json_t *o = json_object();
	const char *kind;

	if (!q) {
		jout_str(o, "kind", "none");
		return o;
	}
	kind = rtnl_tc_get_kind(TC_CAST(q));
	jout_str(o, "kind", kind);
	if (kind && strcmp(kind, "tbf") == 0) {
		jout_u64(o, "rate_bps", (uint64_t)(uint32_t)rtnl_qdisc_tbf_get_rate(q) * 8);
		jout_int(o, "burst", rtnl_qdisc_tbf_get_rate_bucket(q));
		jout_int(o, "limit", rtnl_qdisc_tbf_get_limit(q));
	}
	rtnl_qdisc_put(q);
	return o;
}

static json_t *iface_json(struct kernel_host *h, struct caches *c, struct rtnl_link *link,
			  const char *link_name)
{
	json_t *o = json_object(), *addrs = json_array();
	int idx = rtnl_link_get_ifindex(link);
	const char *name = rtnl_link_get_name(link);
	char oper[32];
	int gro, tso;

	jout_str(o, "name", name);
	jout_str(o, "link", link_name);
	jout_bool(o, "exists", true);
	jout_int(o, "ifindex", idx);
	jout_bool(o, "up", (rtnl_link_get_flags(link) & IFF_UP) != 0);
	rtnl_link_operstate2str(rtnl_link_get_operstate(link), oper, sizeof(oper));
	jout_str(o, "operstate", oper);
	jout_int(o, "mtu", rtnl_link_get_mtu(link));
	jout_int(o, "tx_queues", rtnl_link_get_num_tx_queues(link));
	jout_int(o, "rx_queues", rtnl_link_get_num_rx_queues(link));
	for (struct nl_object *obj = nl_cache_get_first(c->addrs); obj;
	     obj = nl_cache_get_next(obj)) {
		struct rtnl_addr *a = (struct rtnl_addr *)obj;

		if (rtnl_addr_get_ifindex(a) != idx)
			continue;
		/* The kernel's own link-local addresses are not the topology's. */
		if (rtnl_addr_get_scope(a) == RT_SCOPE_LINK)
			continue;
		jout_append(addrs, prefix_json(rtnl_addr_get_local(a)));
	}
	jout_set(o, "addresses", addrs);
	gro = kernel_feature_get(h, name, KERNEL_FEATURE_GRO);
	tso = kernel_feature_get(h, name, KERNEL_FEATURE_TSO);
	jout_set(o, "gro", gro < 0 ? json_null() : json_boolean(gro));
	jout_set(o, "tso", tso < 0 ? json_null() : json_boolean(tso));
	jout_set(o, "qdisc", qdisc_json(c, idx));
	return o;
}

/* Link of the file that names interface ifname on host hi, or NULL. */
static const char *file_link(const struct topo *t, int hi, const char *ifname)
{
	for (int i = 0; i < t->nlinks; i++) {
		for (int e = 0; e < 2; e++) {
			if (t->links[i].end[e].host == hi &&
			    strcmp(t->links[i].end[e].ifname, ifname) == 0)
				return t->links[i].name;
		}
	}
	return NULL;
}

static json_t *ifaces_json(const struct topo *t, int hi, struct kernel_host *h, struct caches *c)
{
	json_t *arr = json_array();

	for (struct nl_object *obj = nl_cache_get_first(c->links); obj;
	     obj = nl_cache_get_next(obj)) {
		struct rtnl_link *l = (struct rtnl_link *)obj;

		if (rtnl_link_get_flags(l) & IFF_LOOPBACK)
			continue;
		jout_append(arr, iface_json(h, c, l, file_link(t, hi, rtnl_link_get_name(l))));
	}
	/* What the file names but the kernel lacks is shown too: absence is state. */
	for (int i = 0; i < t->nlinks; i++) {
		for (int e = 0; e < 2; e++) {
			const struct topo_end *end = &t->links[i].end[e];
			json_t *o;

			if (end->host != hi || rtnl_link_name2i(c->links, end->ifname) > 0)
				continue;
			o = json_object();
			jout_str(o, "name", end->ifname);
			jout_str(o, "link", t->links[i].name);
			jout_bool(o, "exists", false);
			jout_append(arr, o);
		}
	}
	return arr;
}

static json_t *routes_json(struct caches *c)
{
	json_t *arr = json_array();
	char proto[32];

	for (struct nl_object *obj = nl_cache_get_first(c->routes); obj;
	     obj = nl_cache_get_next(obj)) {
		struct rtnl_route *r = (struct rtnl_route *)obj;
		struct rtnl_nexthop *nh;
		struct nl_addr *dst = rtnl_route_get_dst(r);
		json_t *o;
		uint32_t mtu = 0;
		/* The local table's routes of ours (static: the kernel's own for each address
		 * are "kernel"), as route = local DEST makes them. */
		bool local = rtnl_route_get_table(r) == RT_TABLE_LOCAL &&
			     rtnl_route_get_type(r) == RTN_LOCAL &&
			     rtnl_route_get_protocol(r) == RTPROT_STATIC;

		if (!local && (rtnl_route_get_table(r) != RT_TABLE_MAIN ||
			       rtnl_route_get_type(r) != RTN_UNICAST))
			continue;
		/* IPv6 link-local routes come with every interface; they say nothing here. */
		if (rtnl_route_get_family(r) == AF_INET6 && nl_addr_get_prefixlen(dst) == 64 &&
		    ((const uint8_t *)nl_addr_get_binary_addr(dst))[0] == 0xfe)
			continue;
		o = json_object();
		jout_str(o, "type", local ? "local" : "unicast");
		jout_set(o, "dst", prefix_json(dst));
		nh = rtnl_route_nexthop_n(r, 0);
		if (nh && rtnl_route_nh_get_gateway(nh))
			jout_set(o, "via", addr_json(rtnl_route_nh_get_gateway(nh)));
		if (nh) {
			char dev[IFNAMSIZ];

			if (rtnl_link_i2name(c->links, rtnl_route_nh_get_ifindex(nh), dev,
					     sizeof(dev)))
				jout_str(o, "dev", dev);
		}
		rtnl_route_get_metric(r, RTAX_MTU, &mtu);
		jout_int(o, "mtu", mtu);
		rtnl_route_proto2str(rtnl_route_get_protocol(r), proto, sizeof(proto));
		jout_str(o, "protocol", proto);
		jout_append(arr, o);
	}
	return arr;
}

static json_t *sysctl_bool(struct kernel_host *h, const char *name)
{
	char v[16];

	if (kernel_sysctl_get(h, name, v, sizeof(v)))
		return json_null();
	return json_boolean(strcmp(v, "0") != 0);
}

static json_t *host_json(const struct topo *t, int hi, const char *prefix)
{
	const struct topo_host *th = &t->hosts[hi];
	char ns[NETNS_NAME_MAX], cpus[256];
	struct kernel_host h;
	struct caches c;
	json_t *o = json_object(), *pids, *fwd;
	pid_t list[64];
	int n, rc;

	topo_netns_name(prefix, th, ns);
	jout_str(o, "name", th->name);
	jout_str(o, "netns", ns);
	if (th->has_cpus && format_cpulist(&th->cpus, cpus, sizeof(cpus)) >= 0)
		jout_str(o, "cpus", cpus);
	rc = kernel_host_open(&h, ns);
	jout_bool(o, "exists", rc == 0);
	if (rc) {
		if (rc != -ENOENT)
			jout_str(o, "error", strerror(-rc));
		return o;
	}
	pids = json_array();
	n = netns_pids(ns, list, 64);
	for (int i = 0; i < n && i < 64; i++)
		jout_append(pids, json_integer(list[i]));
	jout_set(o, "processes", pids);
	fwd = json_object();
	jout_set(fwd, "ipv4", sysctl_bool(&h, "net.ipv4.ip_forward"));
	jout_set(fwd, "ipv6", sysctl_bool(&h, "net.ipv6.conf.all.forwarding"));
	jout_set(o, "forwarding", fwd);
	rc = caches_fill(&h, &c);
	if (rc) {
		jout_str(o, "error", strerror(-rc));
	} else {
		jout_set(o, "interfaces", ifaces_json(t, hi, &h, &c));
		jout_set(o, "routes", routes_json(&c));
		caches_free(&c);
	}
	kernel_host_close(&h);
	return o;
}

json_t *topo_show(const struct topo *t, const char *prefix)
{
	json_t *doc = json_object(), *hosts = json_array();

	if (!doc || !hosts)
		return NULL;
	jout_str(doc, "topology", t->name[0] ? t->name : NULL);
	jout_str(doc, "prefix", prefix);
	for (int i = 0; i < t->nhosts; i++)
		jout_append(hosts, host_json(t, i, prefix));
	jout_set(doc, "hosts", hosts);
	return doc;
}

static const char *jstr(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

static const char *onoff(const json_t *v)
{
	return json_is_true(v) ? "on" : json_is_false(v) ? "off" : "?";
}

static void iface_text(FILE *f, const json_t *i)
{
	const json_t *q = json_object_get(i, "qdisc"), *a;
	size_t k;

	if (!json_is_true(json_object_get(i, "exists"))) {
		fprintf(f, "  %-15s missing (link %s)\n", jstr(i, "name"), jstr(i, "link"));
		return;
	}
	fprintf(f, "  %-15s %-4s mtu %lld queues %lld/%lld gro %s tso %s", jstr(i, "name"),
		json_is_true(json_object_get(i, "up")) ? "up" : "down",
		json_integer_value(json_object_get(i, "mtu")),
		json_integer_value(json_object_get(i, "tx_queues")),
		json_integer_value(json_object_get(i, "rx_queues")),
		onoff(json_object_get(i, "gro")), onoff(json_object_get(i, "tso")));
	json_array_foreach(json_object_get(i, "addresses"), k, a)
		fprintf(f, " %s", json_string_value(a));
	fputc('\n', f);
	if (q && strcmp(jstr(q, "kind"), "tbf") == 0) {
		char rate[32];

		format_rate((uint64_t)json_number_value(json_object_get(q, "rate_bps")), rate,
			    sizeof(rate));
		fprintf(f, "  %-15s tbf rate %s burst %lld limit %lld\n", "", rate,
			json_integer_value(json_object_get(q, "burst")),
			json_integer_value(json_object_get(q, "limit")));
	}
}

void topo_show_text(FILE *f, const json_t *doc)
{
	const json_t *h, *i, *r, *fwd;
	size_t k, m;

	fprintf(f, "topology %s, prefix %s\n", jstr(doc, "topology"), jstr(doc, "prefix"));
	json_array_foreach(json_object_get(doc, "hosts"), k, h)
	{
		if (!json_is_true(json_object_get(h, "exists"))) {
			fprintf(f, "%s: absent\n", jstr(h, "netns"));
			continue;
		}
		fwd = json_object_get(h, "forwarding");
		fprintf(f, "%s: forwarding ipv4 %s ipv6 %s, %zu processes%s%s\n", jstr(h, "netns"),
			onoff(json_object_get(fwd, "ipv4")), onoff(json_object_get(fwd, "ipv6")),
			json_array_size(json_object_get(h, "processes")),
			json_object_get(h, "cpus") ? ", cpus " : "", jstr(h, "cpus"));
		json_array_foreach(json_object_get(h, "interfaces"), m, i) iface_text(f, i);
		json_array_foreach(json_object_get(h, "routes"), m, r)
		{
			fprintf(f, "  route %s%s", strcmp(jstr(r, "type"), "local") ? "" : "local ",
				jstr(r, "dst"));
			if (json_object_get(r, "via"))
				fprintf(f, " via %s", jstr(r, "via"));
			if (json_object_get(r, "dev"))
				fprintf(f, " dev %s", jstr(r, "dev"));
			if (json_integer_value(json_object_get(r, "mtu")))
				fprintf(f, " mtu %lld",
					json_integer_value(json_object_get(r, "mtu")));
			fprintf(f, " proto %s\n", jstr(r, "protocol"));
		}
	}
}
