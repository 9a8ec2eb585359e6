/*
 * Topology file parser: an INI dialect read with libinih (docs/topology.md). libinih splits
 * "key = value" and strips comments; the line reader here feeds it from memory, counts lines
 * and handles section headers, so that sections without keys still exist. Syntax only: the
 * cross-checks are topo_validate's, and topo_load.c runs the two in turn.
 */
#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "iniline.h"
#include "parse.h"
#include "topo.h"
#include "topo_model.h"

enum section_kind {
	SEC_NONE,
	SEC_TOPOLOGY,
	SEC_HOST,
	SEC_LINK,
};

struct parser {
	struct topo *t;
	struct line_error *err;
	struct iniline in; /* what is left to read */
	int line;	   /* the line read last */
	int rc;		   /* 0 until the first refusal, then -EINVAL */
	enum section_kind sec;
	int index;	    /* host or link being filled */
	char sec_text[64];  /* "[host client]", for messages */
	unsigned long seen; /* single-valued keys already given in this section */
	bool topology_seen;
	int topology_line;
};

/* Records the first error only; everything after it is noise caused by it. Returns 0. */
#define FAIL(ps, line, ...) line_error_first((ps)->err, &(ps)->rc, -EINVAL, (line), __VA_ARGS__)

static bool name_ok(const char *s, size_t max)
{
	size_t n = strlen(s);

	return n > 0 && n < max &&
	       strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}

/* "[kind name]" with the brackets already removed and spaces trimmed. */
static void begin_section(struct parser *ps, char *text)
{
	struct topo *t = ps->t;
	char *kind, *name, *extra, *save = NULL;

	snprintf(ps->sec_text, sizeof(ps->sec_text), "[%s]", text);
	ps->seen = 0;
	kind = strtok_r(text, " \t", &save);
	name = kind ? strtok_r(NULL, " \t", &save) : NULL;
	extra = name ? strtok_r(NULL, " \t", &save) : NULL;
	if (!kind) {
		FAIL(ps, ps->line, "empty section header '[]'");
		return;
	}
	if (strcmp(kind, "topology") == 0) {
		if (name) {
			FAIL(ps, ps->line, "section [topology] takes no name, got '%s'", name);
			return;
		}
		if (ps->topology_seen) {
			FAIL(ps, ps->line, "duplicate section [topology] (first at line %d)",
			     ps->topology_line);
			return;
		}
		ps->topology_seen = true;
		ps->topology_line = ps->line;
		ps->sec = SEC_TOPOLOGY;
		return;
	}
	if (strcmp(kind, "host") != 0 && strcmp(kind, "link") != 0) {
		FAIL(ps, ps->line,
		     "unknown section %s: expected [topology], [host NAME] or [link NAME]",
		     ps->sec_text);
		return;
	}
	if (!name) {
		FAIL(ps, ps->line, "section [%s] needs a name: [%s NAME]", kind, kind);
		return;
	}
	if (extra) {
		FAIL(ps, ps->line, "section %s: one name only, got '%s' after '%s'", ps->sec_text,
		     extra, name);
		return;
	}
	if (strcmp(kind, "host") == 0) {
		struct topo_host *h;
		int dup = topo_host_find(t, name);

		if (!name_ok(name, TOPO_NAME_LEN)) {
			FAIL(ps, ps->line,
			     "bad host name '%s': use 1 to %d letters, digits, '_' or '-'", name,
			     TOPO_NAME_LEN - 1);
			return;
		}
		if (dup >= 0) {
			FAIL(ps, ps->line, "duplicate host '%s' (first defined at line %d)", name,
			     t->hosts[dup].line);
			return;
		}
		if (t->nhosts >= TOPO_MAX_HOSTS) {
			FAIL(ps, ps->line, "too many hosts: at most %d", TOPO_MAX_HOSTS);
			return;
		}
		ps->sec = SEC_HOST;
		ps->index = t->nhosts++;
		h = &t->hosts[ps->index];
		snprintf(h->name, sizeof(h->name), "%s", name);
		h->line = ps->line;
	} else {
		struct topo_link *l;
		int dup = topo_link_find(t, name);

		if (!name_ok(name, TOPO_IFNAME_LEN)) {
			FAIL(ps, ps->line,
			     "bad link name '%s': use 1 to %d letters, digits, '_' or '-' (it "
			     "names the interfaces)",
			     name, TOPO_IFNAME_LEN - 1);
			return;
		}
		if (dup >= 0) {
			FAIL(ps, ps->line, "duplicate link '%s' (first defined at line %d)", name,
			     t->links[dup].line);
			return;
		}
		if (t->nlinks >= TOPO_MAX_LINKS) {
			FAIL(ps, ps->line, "too many links: at most %d", TOPO_MAX_LINKS);
			return;
		}
		ps->sec = SEC_LINK;
		ps->index = t->nlinks++;
		l = &t->links[ps->index];
		snprintf(l->name, sizeof(l->name), "%s", name);
		l->line = ps->line;
		for (int e = 0; e < 2; e++) {
			l->end[e].host = -1;
			snprintf(l->end[e].ifname, sizeof(l->end[e].ifname), "%s", name);
		}
	}
}

/* libinih's reader callback: a line at a time (iniline.h); section headers taken here, so that
 * a section without keys exists too. */
static char *read_line(char *str, int num, void *stream)
{
	struct parser *ps = stream;
	char why[sizeof(ps->err->msg)];
	enum iniline_kind k;

	if (ps->rc)
		return NULL;
	k = iniline_next(&ps->in, str, num, why, sizeof(why));
	ps->line = ps->in.line;
	switch (k) {
	case INILINE_END:
		return NULL;
	case INILINE_BAD:
		FAIL(ps, ps->line, "%s", why);
		return NULL;
	case INILINE_SECTION:
		begin_section(ps, str);
		return ps->rc ? NULL : iniline_section_mark(str, num);
	case INILINE_TEXT:
		break;
	}
	return str;
}

/* Single-valued keys, one bit each, to refuse a second "mtu =" in a section. */
enum key_bit {
	KEY_NAME,
	KEY_PREFIX,
	KEY_CPUS,
	KEY_FORWARD,
	KEY_A,
	KEY_B,
	KEY_A_IFNAME,
	KEY_B_IFNAME,
	KEY_MTU,
	KEY_QUEUES,
	KEY_RATE,
	KEY_BURST,
	KEY_LIMIT,
	KEY_GRO,
	KEY_TSO,
	KEY_MULTI, /* may repeat: addresses, routes, sysctls */
};

struct key_ops {
	const char *name;
	enum section_kind sec;
	enum key_bit bit;
	void (*set)(struct parser *ps, const char *key, const char *value);
};

static void set_topology_name(struct parser *ps, const char *key, const char *value)
{
	if (!name_ok(value, TOPO_NAME_LEN)) {
		FAIL(ps, ps->line, "bad value '%s' for %s: use 1 to %d letters, digits, '_' or '-'",
		     value, key, TOPO_NAME_LEN - 1);
		return;
	}
	snprintf(ps->t->name, sizeof(ps->t->name), "%s", value);
}

static void set_prefix(struct parser *ps, const char *key, const char *value)
{
	if (!topo_prefix_valid(value)) {
		FAIL(ps, ps->line,
		     "bad value '%s' for %s: use 1 to %d letters, digits or '_' (no '-')", value,
		     key, TOPO_PREFIX_LEN - 1);
		return;
	}
	snprintf(ps->t->prefix, sizeof(ps->t->prefix), "%s", value);
}

static void set_cpus(struct parser *ps, const char *key, const char *value)
{
	struct topo_host *h = &ps->t->hosts[ps->index];

	if (parse_cpulist(value, &h->cpus) < 0) {
		FAIL(ps, ps->line, "bad value '%s' for %s: expected a CPU list such as 0-3,6",
		     value, key);
		return;
	}
	h->has_cpus = true;
}

static void set_forward(struct parser *ps, const char *key, const char *value)
{
	if (parse_bool(value, &ps->t->hosts[ps->index].forward))
		FAIL(ps, ps->line, "bad value '%s' for %s: expected yes or no", value, key);
}

static void add_sysctl(struct parser *ps, const char *name, const char *value)
{
	struct topo_host *h = &ps->t->hosts[ps->index];
	struct topo_sysctl *s;
	size_t n = strlen(name);

	/* Only net.* is per namespace: anything else would change the whole machine. */
	if (strncmp(name, "net.", 4) != 0) {
		FAIL(ps, ps->line, "sysctl '%s' is not per namespace: only net.* can be set", name);
		return;
	}
	if (n >= TOPO_SYSCTL_NAME_LEN || strstr(name, "..") || name[n - 1] == '.' ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") !=
		    n) {
		FAIL(ps, ps->line, "bad sysctl name '%s'", name);
		return;
	}
	if (!*value || strlen(value) >= TOPO_SYSCTL_VALUE_LEN || strchr(value, '\n')) {
		FAIL(ps, ps->line, "bad value '%s' for sysctl %s", value, name);
		return;
	}
	for (int i = 0; i < h->nsysctls; i++) {
		if (strcmp(h->sysctls[i].name, name) == 0) {
			FAIL(ps, ps->line, "duplicate sysctl '%s' in %s (first at line %d)", name,
			     ps->sec_text, h->sysctls[i].line);
			return;
		}
	}
	if (h->nsysctls >= TOPO_MAX_SYSCTLS) {
		FAIL(ps, ps->line, "too many sysctls in %s: at most %d", ps->sec_text,
		     TOPO_MAX_SYSCTLS);
		return;
	}
	s = &h->sysctls[h->nsysctls++];
	snprintf(s->name, sizeof(s->name), "%s", name);
	snprintf(s->value, sizeof(s->value), "%s", value);
	s->line = ps->line;
}

static void set_route(struct parser *ps, const char *key, const char *value)
{
	struct topo *t = ps->t;
	struct topo_route *r;
	char buf[TOPO_LINE_MAX], *tok, *save = NULL, pfx[NETPREFIX_STRLEN];
	uint64_t mtu;

	(void)key;
	if (t->nroutes >= TOPO_MAX_ROUTES) {
		FAIL(ps, ps->line, "too many routes: at most %d", TOPO_MAX_ROUTES);
		return;
	}
	r = &t->routes[t->nroutes];
	memset(r, 0, sizeof(*r));
	r->host = ps->index;
	r->line = ps->line;
	snprintf(r->text, sizeof(r->text), "%s", value);
	snprintf(buf, sizeof(buf), "%s", value);

	tok = strtok_r(buf, " \t", &save);
	if (tok && strcmp(tok, "local") == 0) {
		r->local = true;
		tok = strtok_r(NULL, " \t", &save);
	}
	if (!tok) {
		FAIL(ps, ps->line,
		     "empty route: expected DEST [via ADDR] [dev LINK] [mtu N], or local DEST");
		return;
	}
	if (strcmp(tok, "default") == 0) {
		FAIL(ps, ps->line,
		     "route 'default' would reach beyond " NETADDR_BENCH_RANGES
		     ": name a prefix inside them");
		return;
	}
	if (netaddr_parse_prefix(tok, &r->dst)) {
		FAIL(ps, ps->line, "bad route destination '%s'", tok);
		return;
	}
	if (!netaddr_prefix_is_bench(&r->dst)) {
		FAIL(ps, ps->line, "route destination '%s' is outside " NETADDR_BENCH_RANGES, tok);
		return;
	}
	if (netaddr_prefix_has_host_bits(&r->dst)) {
		struct netprefix net = r->dst;

		for (unsigned bit = net.len; bit < netaddr_len(net.addr.family) * 8; bit++)
			net.addr.bytes[bit / 8] &= (uint8_t) ~(0x80 >> (bit % 8));
		FAIL(ps, ps->line, "route destination '%s' has host bits set: did you mean %s?",
		     tok, netaddr_format_prefix(&net, pfx));
		return;
	}
	if (r->local) {
		tok = strtok_r(NULL, " \t", &save);
		if (tok) {
			FAIL(ps, ps->line,
			     "route '%s': unexpected '%s': a local route takes no via, dev or mtu",
			     value, tok);
			return;
		}
		t->nroutes++;
		return;
	}
	while ((tok = strtok_r(NULL, " \t", &save)) != NULL) {
		char *arg = strtok_r(NULL, " \t", &save);

		if (!arg) {
			FAIL(ps, ps->line, "route '%s': '%s' needs a value", value, tok);
			return;
		}
		if (strcmp(tok, "via") == 0 && !r->has_via) {
			if (netaddr_parse(arg, &r->via)) {
				FAIL(ps, ps->line, "route '%s': bad next hop '%s'", value, arg);
				return;
			}
			if (r->via.family != r->dst.addr.family) {
				FAIL(ps, ps->line,
				     "route '%s': next hop '%s' is of the other family", value,
				     arg);
				return;
			}
			r->has_via = true;
		} else if (strcmp(tok, "dev") == 0 && !r->dev[0]) {
			if (!name_ok(arg, TOPO_IFNAME_LEN)) {
				FAIL(ps, ps->line, "route '%s': bad link name '%s'", value, arg);
				return;
			}
			snprintf(r->dev, sizeof(r->dev), "%s", arg);
		} else if (strcmp(tok, "mtu") == 0 && !r->mtu) {
			if (parse_u64(arg, TOPO_MTU_MIN, TOPO_MTU_MAX, &mtu)) {
				FAIL(ps, ps->line, "route '%s': bad mtu '%s': expected %d to %d",
				     value, arg, TOPO_MTU_MIN, TOPO_MTU_MAX);
				return;
			}
			r->mtu = (unsigned)mtu;
		} else {
			FAIL(ps, ps->line,
			     "route '%s': unexpected '%s': expected DEST [via ADDR] [dev LINK] "
			     "[mtu N]",
			     value, tok);
			return;
		}
	}
	if (!r->has_via && !r->dev[0]) {
		FAIL(ps, ps->line, "route '%s' needs 'via ADDR' or 'dev LINK'", value);
		return;
	}
	t->nroutes++;
}

static void set_end_host(struct parser *ps, const char *key, const char *value)
{
	struct topo_end *e = &ps->t->links[ps->index].end[key[0] == 'b'];

	if (!name_ok(value, TOPO_NAME_LEN)) {
		FAIL(ps, ps->line, "bad host name '%s' for %s", value, key);
		return;
	}
	snprintf(e->host_name, sizeof(e->host_name), "%s", value);
	e->line = ps->line;
}

static void set_end_ifname(struct parser *ps, const char *key, const char *value)
{
	struct topo_end *e = &ps->t->links[ps->index].end[key[0] == 'b'];

	if (!name_ok(value, TOPO_IFNAME_LEN) || strcmp(value, "lo") == 0) {
		FAIL(ps, ps->line,
		     "bad value '%s' for %s: use 1 to %d letters, digits, '_' or '-', not lo",
		     value, key, TOPO_IFNAME_LEN - 1);
		return;
	}
	snprintf(e->ifname, sizeof(e->ifname), "%s", value);
}

static void add_end_addrs(struct parser *ps, const char *key, const char *value)
{
	struct topo_end *e = &ps->t->links[ps->index].end[key[0] == 'b'];
	char buf[TOPO_LINE_MAX], *tok, *save = NULL;
	struct netprefix p;

	snprintf(buf, sizeof(buf), "%s", value);
	tok = strtok_r(buf, " \t,", &save);
	if (!tok) {
		FAIL(ps, ps->line, "%s needs an address such as 198.18.0.1/24", key);
		return;
	}
	for (; tok; tok = strtok_r(NULL, " \t,", &save)) {
		if (netaddr_parse_prefix(tok, &p) || !strchr(tok, '/')) {
			FAIL(ps, ps->line, "bad address '%s' for %s: expected ADDR/LEN", tok, key);
			return;
		}
		if (!netaddr_prefix_is_bench(&p)) {
			FAIL(ps, ps->line, "address '%s' is outside " NETADDR_BENCH_RANGES, tok);
			return;
		}
		if (!netaddr_prefix_has_host_bits(&p) && p.len < netaddr_len(p.addr.family) * 8) {
			FAIL(ps, ps->line,
			     "address '%s' is the network itself: give a host address", tok);
			return;
		}
		if (e->naddrs >= TOPO_MAX_ADDRS) {
			FAIL(ps, ps->line, "too many addresses on one end: at most %d",
			     TOPO_MAX_ADDRS);
			return;
		}
		e->addr_lines[e->naddrs] = ps->line;
		e->addrs[e->naddrs++] = p;
	}
}

static void set_link_number(struct parser *ps, const char *key, const char *value)
{
	struct topo_link *l = &ps->t->links[ps->index];
	uint64_t v;

	if (strcmp(key, "mtu") == 0) {
		if (parse_u64(value, TOPO_MTU_MIN, TOPO_MTU_MAX, &v)) {
			FAIL(ps, ps->line, "bad value '%s' for mtu: expected %d to %d", value,
			     TOPO_MTU_MIN, TOPO_MTU_MAX);
			return;
		}
		l->mtu = (unsigned)v;
	} else {
		if (parse_u64(value, 1, TOPO_MAX_QUEUES, &v)) {
			FAIL(ps, ps->line, "bad value '%s' for queues: expected 1 to %d", value,
			     TOPO_MAX_QUEUES);
			return;
		}
		l->queues = (unsigned)v;
	}
}

static void set_link_shaping(struct parser *ps, const char *key, const char *value)
{
	struct topo_link *l = &ps->t->links[ps->index];
	uint64_t v;

	if (strcmp(key, "rate") == 0) {
		int rc = parse_rate(value, &v);

		if (rc == 0 && v > TOPO_RATE_MAX_BPS)
			rc = -ERANGE;
		if (rc == -ERANGE) {
			FAIL(ps, ps->line, "rate '%s' is above the 32gbit that tbf takes", value);
			return;
		}
		if (rc || v < 8000) {
			FAIL(ps, ps->line,
			     "bad value '%s' for rate: expected a bit rate from 8kbit, e.g. 1gbit",
			     value);
			return;
		}
		l->rate = v;
		l->rate_line = ps->line;
		return;
	}
	/* tbf keeps its bucket and queue limit in 32 bits. */
	if (parse_size(value, &v) || v == 0 || v > UINT32_MAX) {
		FAIL(ps, ps->line, "bad value '%s' for %s: expected a size such as 64k", value,
		     key);
		return;
	}
	if (strcmp(key, "burst") == 0)
		l->burst = v;
	else
		l->limit = v;
}

static void set_link_feature(struct parser *ps, const char *key, const char *value)
{
	struct topo_link *l = &ps->t->links[ps->index];
	bool on;

	if (parse_bool(value, &on)) {
		FAIL(ps, ps->line, "bad value '%s' for %s: expected on or off", value, key);
		return;
	}
	if (strcmp(key, "gro") == 0)
		l->gro = on ? TOPO_ON : TOPO_OFF;
	else
		l->tso = on ? TOPO_ON : TOPO_OFF;
}

static const struct key_ops key_table[] = {
	{ "name", SEC_TOPOLOGY, KEY_NAME, set_topology_name },
	{ "prefix", SEC_TOPOLOGY, KEY_PREFIX, set_prefix },
	{ "cpus", SEC_HOST, KEY_CPUS, set_cpus },
	{ "forward", SEC_HOST, KEY_FORWARD, set_forward },
	{ "route", SEC_HOST, KEY_MULTI, set_route },
	{ "a", SEC_LINK, KEY_A, set_end_host },
	{ "b", SEC_LINK, KEY_B, set_end_host },
	{ "a.addr", SEC_LINK, KEY_MULTI, add_end_addrs },
	{ "b.addr", SEC_LINK, KEY_MULTI, add_end_addrs },
	{ "a.ifname", SEC_LINK, KEY_A_IFNAME, set_end_ifname },
	{ "b.ifname", SEC_LINK, KEY_B_IFNAME, set_end_ifname },
	{ "mtu", SEC_LINK, KEY_MTU, set_link_number },
	{ "queues", SEC_LINK, KEY_QUEUES, set_link_number },
	{ "rate", SEC_LINK, KEY_RATE, set_link_shaping },
	{ "burst", SEC_LINK, KEY_BURST, set_link_shaping },
	{ "limit", SEC_LINK, KEY_LIMIT, set_link_shaping },
	{ "gro", SEC_LINK, KEY_GRO, set_link_feature },
	{ "tso", SEC_LINK, KEY_TSO, set_link_feature },
};

static int on_key(void *user, const char *section, const char *name, const char *value)
{
	struct parser *ps = user;

	(void)section;
	if (ps->rc)
		return 0;
	if (ps->sec == SEC_NONE)
		return FAIL(ps, ps->line, "key '%s' outside any section", name);
	if (ps->sec == SEC_HOST && strncmp(name, "sysctl.", 7) == 0) {
		add_sysctl(ps, name + 7, value);
		return !ps->rc;
	}
	for (size_t i = 0; i < sizeof(key_table) / sizeof(key_table[0]); i++) {
		const struct key_ops *k = &key_table[i];

		if (k->sec != ps->sec || strcmp(k->name, name) != 0)
			continue;
		if (k->bit != KEY_MULTI) {
			if (ps->seen & (1ul << k->bit))
				return FAIL(ps, ps->line, "duplicate key '%s' in %s", name,
					    ps->sec_text);
			ps->seen |= 1ul << k->bit;
		}
		if (!*value)
			return FAIL(ps, ps->line, "key '%s' has no value", name);
		k->set(ps, name, value);
		return !ps->rc;
	}
	return FAIL(ps, ps->line, "unknown key '%s' in %s", name, ps->sec_text);
}

int topo_parse_syntax(const char *text, size_t len, struct topo *t, struct line_error *err)
{
	struct parser ps = {
		.t = t,
		.err = err,
		.in = { .p = text, .end = text + len },
	};
	int rc;

	memset(t, 0, sizeof(*t));
	memset(err, 0, sizeof(*err));
	snprintf(t->prefix, sizeof(t->prefix), "%s", TOPO_DEFAULT_PREFIX);
	rc = ini_parse_stream(read_line, &ps, on_key, &ps);
	/* libinih reports its own first error (a line with no '=') by number only. */
	if (rc > 0 && (!ps.rc || rc < err->line)) {
		ps.rc = 0;
		FAIL(&ps, rc, "expected 'key = value' or a [section]");
	} else if (rc < 0 && !ps.rc) {
		FAIL(&ps, 0, "cannot parse: libinih error %d", rc);
	}
	if (ps.rc)
		return -EINVAL;
	if (t->nhosts == 0) {
		FAIL(&ps, 0, "no [host NAME] section: a topology needs at least one host");
		return -EINVAL;
	}
	return 0;
}
