/*
 * The wire audit's report (see wire_report.h). Everything a person reads is taken from the
 * JSON document, which is the contract with scripts/ (docs/wire.md).
 */
#include "wire_report.h"

#include <netinet/in.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "clock.h"
#include "inet.h"
#include "jout.h"
#include "netaddr.h"
#include "parse.h"

#ifndef TUNBED_VERSION
#define TUNBED_VERSION "0"
#endif

static const char *const dir_names[2] = { "local_to_remote", "remote_to_local" };

static json_t *addr_json(const struct netaddr *a, bool known)
{
	char buf[NETADDR_STRLEN];

	return known ? json_string(netaddr_format(a, buf)) : json_null();
}

static json_t *want_json(enum wire_want w)
{
	return w == WIRE_WANT_ANY ? json_null() : json_boolean(w == WIRE_WANT_YES);
}

/* --expect-tos, --expect-ttl: "inherit", the number, or null when not checked. */
static json_t *field_json(enum wire_field w, uint8_t value)
{
	if (w == WIRE_FIELD_ANY)
		return json_null();
	return w == WIRE_FIELD_INHERIT ? json_string("inherit") : json_integer(value);
}

static json_t *expect_json(const struct wire_audit *a)
{
	const struct wire_expect *e = &a->expect;
	json_t *o = json_object();

	jout_set(o, "local", addr_json(&e->local, e->has_peers));
	/* --tunnels: the remote ends are the tunnels' peers (the report's "tunnels"). */
	jout_set(o, "remote", addr_json(&e->remote, e->has_peers && !e->tunnels));
	if (e->tunnels)
		jout_u64(o, "tunnels", e->tunnels->n);
	jout_bool(o, "peers_learned", a->learn_peers && e->has_peers);
	if (e->key == WIRE_WANT_YES)
		jout_u64(o, "key", e->key_value);
	else
		jout_set(o, "key", want_json(e->key));
	jout_set(o, "seq", want_json(e->seq));
	jout_set(o, "csum", want_json(e->csum));
	if (e->mtu)
		jout_int(o, "mtu", e->mtu);
	else
		jout_set(o, "mtu", json_null());
	jout_int(o, "udp_port", e->udp_port);
	jout_str(o, "ecn", e->ecn ? "normal" : NULL);
	jout_set(o, "tos", field_json(e->dscp, e->dscp_value));
	jout_set(o, "ttl", field_json(e->ttl, e->ttl_value));
	if (e->link_mtu)
		jout_int(o, "link_mtu", e->link_mtu);
	else
		jout_set(o, "link_mtu", json_null());
	return o;
}

static json_t *violations_json(const struct wire_audit *a)
{
	json_t *o = json_object();

	for (int v = 0; v < WIRE_V_MAX; v++) {
		json_t *k = json_object(), *first = json_array();

		for (uint64_t i = 0; i < a->violations[v] && i < WIRE_FIRST_FRAMES; i++)
			jout_append(first, json_integer((json_int_t)a->first[v][i]));
		jout_u64(k, "count", a->violations[v]);
		jout_set(k, "first_frames", first);
		jout_set(o, wire_violation_name(v), k);
	}
	return o;
}

/* How the outer UDP source ports of one direction spread its inner flows. */
static json_t *udp_ports_json(const struct wire_audit *a, int dir)
{
	const struct wire_dir *d = &a->dir[dir];
	uint32_t *per_port = calloc(WIRE_PORTS, sizeof(*per_port));
	uint64_t ports = 0, flows = 0, several = 0, max = 0;
	json_t *o = json_object();

	for (unsigned i = 0; i < WIRE_PORTS / 64; i++)
		ports += (uint64_t)__builtin_popcountll(d->udp_ports[i]);
	for (size_t i = 0; i < WIRE_FLOW_SLOTS; i++) {
		const struct wire_flow *fl = &a->flows[i];

		if (!fl->used || fl->dir != dir || fl->nports == 0)
			continue;
		flows++;
		if (fl->nports > 1)
			several++;
		for (unsigned j = 0; per_port && j < fl->nports; j++)
			if (++per_port[fl->ports[j]] > max)
				max = per_port[fl->ports[j]];
	}
	free(per_port);
	jout_u64(o, "ports", ports);
	jout_u64(o, "flows", flows);
	jout_u64(o, "flows_on_several_ports", several);
	jout_u64(o, "max_flows_per_port", max);
	return o;
}

/* A uint64_t counter of a struct and its name in the document, in the document's order. */
struct counter {
	const char *name;
	size_t off;
};

static const struct counter dir_counters[] = {
	{ "frames", offsetof(struct wire_dir, frames) },
	{ "bytes", offsetof(struct wire_dir, bytes) },
	{ "ip_bytes", offsetof(struct wire_dir, ip_bytes) },
	{ "gre_frames", offsetof(struct wire_dir, gre_frames) },
	{ "gre_udp_frames", offsetof(struct wire_dir, gre_udp_frames) },
	{ "gso_frames", offsetof(struct wire_dir, gso_frames) },
	{ "gso_datagrams", offsetof(struct wire_dir, gso_datagrams) },
	{ "udp_csum_offloaded", offsetof(struct wire_dir, udp_csum_offloaded) },
	{ "inner_frames", offsetof(struct wire_dir, inner_frames) },
	{ "inner_bytes", offsetof(struct wire_dir, inner_bytes) },
	{ "overhead_bytes", offsetof(struct wire_dir, overhead_bytes) },
};

static const struct counter tcp_counters[] = {
	{ "payload_bytes", offsetof(struct wire_dir, tcp_payload_bytes) },
	{ "new_bytes", offsetof(struct wire_dir, tcp_new_bytes) },
	{ "late_bytes", offsetof(struct wire_dir, tcp_late_bytes) },
	{ "late_resent_bytes", offsetof(struct wire_dir, tcp_resent_bytes) },
	{ "late_unresolved_bytes", offsetof(struct wire_dir, tcp_unresolved_bytes) },
};

static const struct counter seq_counters[] = {
	{ "frames", offsetof(struct wire_seq, frames) },
	{ "missing", offsetof(struct wire_seq, missing) },
	{ "gaps", offsetof(struct wire_seq, gaps) },
	{ "reordered", offsetof(struct wire_seq, reordered) },
	{ "duplicates", offsetof(struct wire_seq, duplicates) },
	{ "too_late", offsetof(struct wire_seq, too_late) },
};

/* Adds the n counters of c, read from the struct at base, to o. */
static void put_counters(json_t *o, const void *base, const struct counter *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t v;

		memcpy(&v, (const char *)base + c[i].off, sizeof(v));
		jout_u64(o, c[i].name, v);
	}
}

/*
 * What crossed of DSCP and ECN: frames by inner and outer ECN codepoint, and the inner DSCPs
 * that were not 0 and how many of them the outer header carried.
 */
static json_t *tos_json(const struct wire_dir *d)
{
	json_t *o = json_object(), *ecn = json_object();

	for (unsigned in = 0; in < 4; in++) {
		json_t *row = json_object();

		for (unsigned out = 0; out < 4; out++)
			jout_u64(row, ip_ecn_name(out), d->ecn[in][out]);
		jout_set(ecn, ip_ecn_name(in), row);
	}
	jout_set(o, "ecn", ecn);
	jout_u64(o, "dscp_marked", d->dscp_marked);
	jout_u64(o, "dscp_copied", d->dscp_copied);
	return o;
}

static json_t *dir_json(const struct wire_audit *a, int dir)
{
	const struct wire_dir *d = &a->dir[dir];
	const struct wire_expect *e = &a->expect;
	json_t *o = json_object(), *sizes = json_array(), *tcp = json_object(),
	       *seq = json_object();
	double span = d->frames > 1 ? clock_secs(d->last_ns - d->first_ns) : 0;
	uint64_t counted = d->overhead_bytes + d->inner_bytes;

	jout_str(o, "name", dir_names[dir]);
	/* --tunnels: the remote ends are the tunnels' peers, null here. */
	jout_set(o, "src",
		 addr_json(dir ? &e->remote : &e->local, e->has_peers && (!dir || !e->tunnels)));
	jout_set(o, "dst",
		 addr_json(dir ? &e->local : &e->remote, e->has_peers && (dir || !e->tunnels)));
	put_counters(o, d, dir_counters, sizeof(dir_counters) / sizeof(dir_counters[0]));
	jout_real(o, "overhead_pct", counted ? 100.0 * (double)d->overhead_bytes / counted : 0);
	jout_real(o, "duration_s", span);
	jout_real(o, "inner_bps", span > 0 ? (double)d->inner_bytes * 8 / span : 0);
	for (int b = 0; b < WIRE_HIST_BUCKETS; b++) {
		json_t *h = json_object();

		if (wire_hist_max[b] == UINT32_MAX)
			jout_set(h, "max", json_null());
		else
			jout_int(h, "max", wire_hist_max[b]);
		jout_u64(h, "frames", d->hist[b]);
		jout_append(sizes, h);
	}
	jout_set(o, "sizes", sizes);
	put_counters(tcp, d, tcp_counters, sizeof(tcp_counters) / sizeof(tcp_counters[0]));
	jout_u64(tcp, "retransmitted_bytes", d->tcp_payload_bytes - d->tcp_new_bytes);
	jout_u64(tcp, "untracked_bytes", d->tcp_untracked_bytes);
	jout_set(o, "tcp", tcp);
	put_counters(seq, &d->seq, seq_counters, sizeof(seq_counters) / sizeof(seq_counters[0]));
	jout_u64(seq, "flow_reordered", d->flow_reordered);
	jout_set(o, "seq", seq);
	jout_set(o, "udp_ports", udp_ports_json(a, dir));
	jout_set(o, "tos", tos_json(d));
	return o;
}

static int by_bytes_desc(const void *x, const void *y)
{
	const struct wire_flow *a = *(const struct wire_flow *const *)x;
	const struct wire_flow *b = *(const struct wire_flow *const *)y;

	if (a->bytes != b->bytes)
		return a->bytes < b->bytes ? 1 : -1;
	return memcmp(&a->key, &b->key, sizeof(a->key));
}

static json_t *proto_json(uint8_t proto)
{
	switch (proto) {
	case IPPROTO_TCP:
		return json_string("tcp");
	case IPPROTO_UDP:
		return json_string("udp");
	case IPPROTO_ICMP:
		return json_string("icmp");
	case IPPROTO_ICMPV6:
		return json_string("ipv6-icmp");
	}
	return json_integer(proto);
}

static json_t *flow_json(const struct wire_flow *fl)
{
	struct netaddr src = { .family = fl->key.family }, dst = { .family = fl->key.family };
	json_t *o = json_object();

	memcpy(src.bytes, fl->key.addr[0], sizeof(src.bytes));
	memcpy(dst.bytes, fl->key.addr[1], sizeof(dst.bytes));
	jout_str(o, "dir", dir_names[fl->dir]);
	jout_set(o, "proto", proto_json(fl->key.proto));
	jout_set(o, "src", addr_json(&src, true));
	jout_int(o, "sport", fl->key.port[0]);
	jout_set(o, "dst", addr_json(&dst, true));
	jout_int(o, "dport", fl->key.port[1]);
	jout_u64(o, "frames", fl->frames);
	jout_u64(o, "bytes", fl->bytes);
	if (fl->nports) {
		jout_int(o, "udp_ports", fl->nports);
		jout_bool(o, "udp_ports_more", fl->ports_more);
		jout_int(o, "udp_port", fl->ports[0]);
	}
	return o;
}

static json_t *flows_json(const struct wire_audit *a, unsigned top)
{
	const struct wire_flow **all = calloc(a->nflows ? a->nflows : 1, sizeof(*all));
	json_t *o = json_object(), *list = json_array();
	size_t n = 0;

	for (size_t i = 0; all && i < WIRE_FLOW_SLOTS; i++)
		if (a->flows[i].used)
			all[n++] = &a->flows[i];
	qsort(all, n, sizeof(*all), by_bytes_desc);
	for (size_t i = 0; i < n && i < top; i++)
		jout_append(list, flow_json(all[i]));
	free(all);
	jout_u64(o, "tracked", a->nflows);
	jout_u64(o, "untracked_frames", a->untracked_frames);
	jout_set(o, "top", list);
	return o;
}

static json_t *source_json(const struct wire_source *src)
{
	json_t *o = json_object();

	jout_str(o, "kind", src->live ? "live" : "file");
	if (src->live) {
		jout_str(o, "netns", src->netns);
		jout_str(o, "iface", src->iface);
	} else {
		jout_str(o, "path", src->path);
	}
	if (src->has_stats) {
		jout_u64(o, "capture_received", src->received);
		jout_u64(o, "capture_dropped", src->dropped);
	}
	return o;
}

/* --tunnels: each tunnel's frames, in the file's order, and the frames of none. */
static json_t *tunnels_json(const struct wire_audit *a)
{
	const struct wire_tunnels *w = a->expect.tunnels;
	json_t *o = json_object(), *list = json_array();
	uint64_t both = 0, bad = 0;

	for (unsigned i = 0; i < w->n; i++) {
		const struct wire_tunnel_count *c = &a->tunnel_counts[i];
		json_t *t = json_object(), *frames = json_array(), *kinds = json_object();
		char buf[NETADDR_STRLEN];

		jout_str(t, "name", w->t[i].name);
		jout_str(t, "peer", netaddr_format(&w->t[i].peer, buf));
		jout_append(frames, json_integer((json_int_t)c->frames[0]));
		jout_append(frames, json_integer((json_int_t)c->frames[1]));
		jout_set(t, "frames", frames);
		jout_u64(t, "violation_frames", c->violation_frames);
		/* By kind, those that happened: the list stays short where the tunnels are clean. */
		for (int v = 0; v < WIRE_V_MAX; v++) {
			if (c->violations[v])
				jout_u64(kinds, wire_violation_name((enum wire_violation)v),
					 c->violations[v]);
		}
		jout_set(t, "violations", kinds);
		jout_append(list, t);
		both += c->frames[0] && c->frames[1];
		bad += c->violation_frames != 0;
	}
	jout_u64(o, "count", w->n);
	jout_u64(o, "both_ways", both);
	jout_u64(o, "with_violations", bad);
	jout_u64(o, "no_tunnel_frames", a->no_tunnel_frames);
	jout_set(o, "list", list);
	return o;
}

json_t *wire_report_json(const struct wire_audit *a, const struct wire_source *src, unsigned top)
{
	json_t *doc = json_object(), *dirs = json_array();

	if (!doc || !dirs) {
		json_decref(doc);
		json_decref(dirs);
		return NULL;
	}
	jout_str(doc, "tool", "tunbed-wire");
	jout_str(doc, "version", TUNBED_VERSION);
	jout_set(doc, "source", source_json(src));
	jout_str(doc, "link", wire_link_name(a->link));
	jout_set(doc, "expect", expect_json(a));
	jout_real(doc, "duration_s", a->frames > 1 ? clock_secs(a->last_ns - a->first_ns) : 0);
	jout_u64(doc, "frames", a->frames);
	jout_u64(doc, "tunnel_frames", a->tunnel_frames);
	jout_u64(doc, "other_frames", a->other_frames);
	jout_u64(doc, "snapped_frames", a->snapped_frames);
	jout_u64(doc, "violation_frames", a->violation_frames);
	jout_bool(doc, "clean", a->violation_frames == 0);
	jout_set(doc, "violations", violations_json(a));
	jout_append(dirs, dir_json(a, 0));
	jout_append(dirs, dir_json(a, 1));
	jout_set(doc, "directions", dirs);
	jout_set(doc, "flows", flows_json(a, top));
	jout_set(doc, "tunnels", a->expect.tunnels ? tunnels_json(a) : json_null());
	return doc;
}

/* Text rendering: reads only the document. */

static uint64_t u(const json_t *o, const char *key)
{
	return (uint64_t)json_integer_value(json_object_get(o, key));
}

static double r(const json_t *o, const char *key)
{
	return json_number_value(json_object_get(o, key));
}

static const char *s(const json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));

	return v ? v : "?";
}

static const char *bytes_text(uint64_t n, char *buf, size_t size)
{
	if (n >= 10000000000ull)
		snprintf(buf, size, "%.1f GB", (double)n / 1e9);
	else if (n >= 10000000)
		snprintf(buf, size, "%.1f MB", (double)n / 1e6);
	else if (n >= 10000)
		snprintf(buf, size, "%.1f kB", (double)n / 1e3);
	else
		snprintf(buf, size, "%llu B", (unsigned long long)n);
	return buf;
}

static void want_text(FILE *f, const char *name, const json_t *v)
{
	if (json_is_true(v))
		fprintf(f, ", %s", name);
	else if (json_is_false(v))
		fprintf(f, ", no %s", name);
}

static void field_text(FILE *f, const char *name, const json_t *v)
{
	if (json_is_string(v))
		fprintf(f, ", %s %s", name, json_string_value(v));
	else if (json_is_integer(v))
		fprintf(f, ", %s %lld", name, (long long)json_integer_value(v));
}

static void head_text(FILE *f, const json_t *doc)
{
	const json_t *src = json_object_get(doc, "source"), *e = json_object_get(doc, "expect");
	const json_t *key = json_object_get(e, "key");

	if (!strcmp(s(src, "kind"), "live")) {
		const char *ns = json_string_value(json_object_get(src, "netns"));

		fprintf(f, "capture on %s%s%s", ns ? ns : "", ns ? "/" : "", s(src, "iface"));
	} else {
		fprintf(f, "capture %s", s(src, "path"));
	}
	fprintf(f, " (%s), %.2f s: %llu frames, %llu tunnel, %llu other, %llu snapped",
		s(doc, "link"), r(doc, "duration_s"), (unsigned long long)u(doc, "frames"),
		(unsigned long long)u(doc, "tunnel_frames"),
		(unsigned long long)u(doc, "other_frames"),
		(unsigned long long)u(doc, "snapped_frames"));
	if (json_object_get(src, "capture_dropped"))
		fprintf(f, "; the capture dropped %llu",
			(unsigned long long)u(src, "capture_dropped"));
	fprintf(f, "\n");
	if (json_is_integer(json_object_get(e, "tunnels"))) {
		fprintf(f, "tunnels %s <-> %llu tunnels' peers", s(e, "local"),
			(unsigned long long)u(e, "tunnels"));
	} else if (json_is_null(json_object_get(e, "local"))) {
		fprintf(f, "tunnel: no GRE seen");
	} else {
		fprintf(f, "tunnel %s <-> %s%s", s(e, "local"), s(e, "remote"),
			json_is_true(json_object_get(e, "peers_learned")) ? " (learned)" : "");
	}
	if (json_is_integer(key))
		fprintf(f, ", key %llu", (unsigned long long)json_integer_value(key));
	else
		want_text(f, "key", key);
	want_text(f, "seq", json_object_get(e, "seq"));
	want_text(f, "csum", json_object_get(e, "csum"));
	if (json_is_integer(json_object_get(e, "mtu")))
		fprintf(f, ", mtu %llu", (unsigned long long)u(e, "mtu"));
	if (json_is_null(json_object_get(e, "ecn")))
		fprintf(f, ", ecn not checked");
	field_text(f, "tos", json_object_get(e, "tos"));
	field_text(f, "ttl", json_object_get(e, "ttl"));
	fprintf(f, "\n");
}

static void violations_text(FILE *f, const json_t *doc)
{
	const json_t *v = json_object_get(doc, "violations"), *k;
	const char *name;

	if (json_is_true(json_object_get(doc, "clean"))) {
		fprintf(f, "violations: none\n");
		return;
	}
	fprintf(f, "violations in %llu frames:\n", (unsigned long long)u(doc, "violation_frames"));
	json_object_foreach((json_t *)v, name, k)
	{
		const json_t *first = json_object_get(k, "first_frames"), *n;
		size_t i;

		if (u(k, "count") == 0)
			continue;
		fprintf(f, "  %-16s %8llu  frames", name, (unsigned long long)u(k, "count"));
		json_array_foreach(first, i, n)
			fprintf(f, "%s%lld", i ? ", " : " ", (long long)json_integer_value(n));
		if (u(k, "count") > json_array_size(first))
			fprintf(f, ", ...");
		fprintf(f, "\n");
	}
}

/*
 * A line of what crossed of ECN and DSCP, when anything did: the ECN pairs but Not-ECT in
 * Not-ECT, inner>outer, and the inner DSCPs carried outside.
 */
static void tos_text(FILE *f, const json_t *tos)
{
	const json_t *ecn = json_object_get(tos, "ecn"), *row, *n;
	const char *in, *out, *sep = " ecn (inner>outer)";
	bool any = false;

	json_object_foreach((json_t *)ecn, in, row)
	{
		json_object_foreach((json_t *)row, out, n)
		{
			if (!json_integer_value(n) || (!strcmp(in, "not-ect") && !strcmp(out, in)))
				continue;
			fprintf(f, "%s%s %s>%s %lld", any ? "" : "  tos:", sep, in, out,
				(long long)json_integer_value(n));
			sep = ",";
			any = true;
		}
	}
	if (u(tos, "dscp_marked")) {
		fprintf(f, "%s dscp %llu marked inside, %llu carried outside",
			any ? ";" : "  tos:", (unsigned long long)u(tos, "dscp_marked"),
			(unsigned long long)u(tos, "dscp_copied"));
		any = true;
	}
	if (any)
		fprintf(f, "\n");
}

static void dir_text(FILE *f, const json_t *d)
{
	const json_t *seq = json_object_get(d, "seq"), *tcp = json_object_get(d, "tcp");
	const json_t *ports = json_object_get(d, "udp_ports"), *h;
	char b1[32], b2[32], b3[32];
	uint64_t prev = 0;
	size_t i;

	fprintf(f, "%s -> %s: %llu frames, %s on the link, inner %s (%s), overhead %.1f%%",
		s(d, "src"), s(d, "dst"), (unsigned long long)u(d, "frames"),
		bytes_text(u(d, "bytes"), b1, sizeof(b1)),
		bytes_text(u(d, "inner_bytes"), b2, sizeof(b2)),
		format_rate_text(r(d, "inner_bps"), b3, sizeof(b3)), r(d, "overhead_pct"));
	if (u(d, "gre_udp_frames"))
		fprintf(f, "; GRE-in-UDP %llu", (unsigned long long)u(d, "gre_udp_frames"));
	fprintf(f, "\n");
	if (u(d, "gso_frames") || u(d, "udp_csum_offloaded"))
		fprintf(f,
			"  offload: %llu GSO frames split into %llu of those frames; %llu UDP "
			"checksums left to the device\n",
			(unsigned long long)u(d, "gso_frames"),
			(unsigned long long)u(d, "gso_datagrams"),
			(unsigned long long)u(d, "udp_csum_offloaded"));
	if (u(seq, "frames"))
		fprintf(f,
			"  seq: %llu numbered, %llu missing in %llu gaps, %llu reordered (%llu "
			"within a "
			"flow), %llu duplicates\n",
			(unsigned long long)u(seq, "frames"), (unsigned long long)u(seq, "missing"),
			(unsigned long long)u(seq, "gaps"), (unsigned long long)u(seq, "reordered"),
			(unsigned long long)u(seq, "flow_reordered"),
			(unsigned long long)u(seq, "duplicates"));
	if (u(tcp, "payload_bytes"))
		fprintf(f, "  tcp: %s payload, %s retransmitted (%.2f%%)",
			bytes_text(u(tcp, "payload_bytes"), b1, sizeof(b1)),
			bytes_text(u(tcp, "retransmitted_bytes"), b2, sizeof(b2)),
			100.0 * (double)u(tcp, "retransmitted_bytes") /
				(double)u(tcp, "payload_bytes"));
	if (u(tcp, "untracked_bytes"))
		fprintf(f, "%s%s payload of untracked flows",
			u(tcp, "payload_bytes") ? "; " : "  tcp: ",
			bytes_text(u(tcp, "untracked_bytes"), b1, sizeof(b1)));
	if (u(tcp, "payload_bytes") || u(tcp, "untracked_bytes"))
		fprintf(f, "\n");
	fprintf(f, "  sizes:");
	json_array_foreach(json_object_get(d, "sizes"), i, h)
	{
		const json_t *max = json_object_get(h, "max");

		if (json_is_null(max))
			fprintf(f, " >%llu: %llu", (unsigned long long)prev,
				(unsigned long long)u(h, "frames"));
		else
			fprintf(f, " %llu-%llu: %llu,", (unsigned long long)(i ? prev + 1 : 0),
				(unsigned long long)json_integer_value(max),
				(unsigned long long)u(h, "frames"));
		if (!json_is_null(max))
			prev = (uint64_t)json_integer_value(max);
	}
	fprintf(f, "\n");
	tos_text(f, json_object_get(d, "tos"));
	if (u(ports, "flows"))
		fprintf(f,
			"  udp source ports: %llu for %llu flows, %llu flows on several ports, at "
			"most "
			"%llu flows on one port\n",
			(unsigned long long)u(ports, "ports"),
			(unsigned long long)u(ports, "flows"),
			(unsigned long long)u(ports, "flows_on_several_ports"),
			(unsigned long long)u(ports, "max_flows_per_port"));
}

static void flows_text(FILE *f, const json_t *doc)
{
	const json_t *fl = json_object_get(doc, "flows"), *top = json_object_get(fl, "top"), *x;
	size_t i;

	if (!json_array_size(top))
		return;
	fprintf(f, "top inner flows (%llu tracked):\n", (unsigned long long)u(fl, "tracked"));
	json_array_foreach(top, i, x)
	{
		const json_t *proto = json_object_get(x, "proto");
		char b[32], p[8];

		if (!json_is_string(proto))
			snprintf(p, sizeof(p), "%lld", (long long)json_integer_value(proto));
		fprintf(f, "  %-15s %-9s %s.%llu > %s.%llu  %llu frames, %s\n", s(x, "dir"),
			json_is_string(proto) ? json_string_value(proto) : p, s(x, "src"),
			(unsigned long long)u(x, "sport"), s(x, "dst"),
			(unsigned long long)u(x, "dport"), (unsigned long long)u(x, "frames"),
			bytes_text(u(x, "bytes"), b, sizeof(b)));
	}
}

void wire_report_text(FILE *f, const json_t *doc)
{
	const json_t *d;
	size_t i;

	head_text(f, doc);
	violations_text(f, doc);
	if (json_is_object(json_object_get(doc, "tunnels"))) {
		const json_t *t = json_object_get(doc, "tunnels");

		fprintf(f,
			"tunnels: %llu, %llu with frames both ways, %llu with violations; %llu "
			"frames of no tunnel\n",
			(unsigned long long)u(t, "count"), (unsigned long long)u(t, "both_ways"),
			(unsigned long long)u(t, "with_violations"),
			(unsigned long long)u(t, "no_tunnel_frames"));
	}
	json_array_foreach(json_object_get(doc, "directions"), i, d) if (u(d, "frames"))
		dir_text(f, d);
	flows_text(f, doc);
}
