/*
 * gregw's tunnel table on the control thread (see tunctl.h): the list of tunnels in force,
 * sorted by name so that a publication sorts nothing, its changes and its listing.
 */
#include "tunctl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "ctl.h"
#include "gre.h"
#include "gw_limits.h"
#include "ifconf.h"
#include "jout.h"
#include "log.h"
#include "parse.h"
#include "tunfile.h"
#include "tx_tap.h"

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct tunnel_spec *)a)->name, ((const struct tunnel_spec *)b)->name);
}

/* The one tunnel of --remote and its options: every inner destination goes into it. */
static void one_tunnel(const struct config *c, struct tunnel_spec *s)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "remote");
	s->peer = c->remote;
	s->gre_flags = (c->has_key ? GRE_F_KEY : 0) | (c->seq ? GRE_F_SEQ : 0) |
		       (c->csum ? GRE_F_CSUM : 0);
	s->key = c->key;
	s->udp = c->gre_udp;
	s->nprefixes = 2;
	s->prefixes[0].addr.family = AF_INET;
	s->prefixes[1].addr.family = AF_INET6;
}

int tunctl_init(struct tunctl *t, const struct config *c)
{
	memset(t, 0, sizeof(*t));
	t->from_file = c->tunnels[0] != '\0';
	t->any_address = c->any_address;
	t->peer = c->remote;
	t->udp = c->gre_udp;
	t->n = t->from_file ? c->tf.n : 1;
	t->specs = malloc(t->n * sizeof(*t->specs));
	if (!t->specs)
		return -ENOMEM;
	t->cap = t->n;
	if (t->from_file) {
		memcpy(t->specs, c->tf.specs, t->n * sizeof(*t->specs));
		qsort(t->specs, t->n, sizeof(*t->specs), by_name);
	} else {
		one_tunnel(c, t->specs);
	}
	for (unsigned i = 0; i < t->n; i++)
		t->gre_flags |= t->specs[i].gre_flags;
	return 0;
}

int tunctl_publish(struct tunctl *t, struct tunnels_pub *pub)
{
	t->pub = pub;
	return tunnels_pub_set(pub, t->specs, t->n);
}

void tunctl_fini(struct tunctl *t)
{
	for (; t->neffect; t->neffect--) {
		json_decref(t->effect[t->effect_head].reply);
		t->effect_head = (t->effect_head + 1) % TUNNELS_RETIRED_MAX;
	}
	free(t->specs);
	t->specs = NULL;
	t->n = t->cap = 0;
}

int tunctl_route(const struct tunctl *t, int ifindex)
{
	char p[NETPREFIX_STRLEN];

	for (unsigned i = 0; t->from_file && i < t->n; i++) {
		const struct tunnel_spec *s = &t->specs[i];

		for (unsigned k = 0; k < s->nprefixes; k++) {
			int rc = ifconf_route_replace(ifindex, &s->prefixes[k]);

			if (rc) {
				log_warnx("cannot route tunnel '%s''s %s into the TUN: %s", s->name,
					  netaddr_format_prefix(&s->prefixes[k], p), strerror(-rc));
				return rc;
			}
		}
	}
	return 0;
}

bool tunctl_has_inner6(const struct tunctl *t)
{
	for (unsigned i = 0; t->from_file && i < t->n; i++) {
		for (unsigned k = 0; k < t->specs[i].nprefixes; k++) {
			if (t->specs[i].prefixes[k].addr.family == AF_INET6)
				return true;
		}
	}
	return false;
}

static json_t *error_reply(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static json_t *error_reply(const char *fmt, ...)
{
	char raw[512], msg[4 * sizeof(raw) + 1];
	json_t *o = json_object();
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	/* The message quotes what the client sent, which may be any byte: JSON takes UTF-8
	 * alone, so it is quoted as the unknown command's reply is (ctl_quote). */
	if (o && jout_str(o, "error", ctl_quote(raw, strlen(raw), msg, sizeof(msg)))) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* The first tunnel whose name is not below name (t->n when none). */
static unsigned lower_bound(const struct tunctl *t, const char *name)
{
	unsigned lo = 0, hi = t->n;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (strcmp(t->specs[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* What only gregw refuses of a tunnel the file's rules allow: what its transports were set
 * up for at start. */
static json_t *unfit(const struct tunctl *t, const struct tunnel_spec *s)
{
	char a[NETADDR_STRLEN], b[NETADDR_STRLEN];

	if (s->peer.family != t->peer.family)
		return error_reply("tunnel '%s': peer %s: gregw's tunnels are of one outer "
				   "family, %s's (for now)",
				   s->name, netaddr_format(&s->peer, a),
				   netaddr_format(&t->peer, b));
	if (s->udp != t->udp)
		return error_reply("tunnel '%s': encap %s: gregw's tunnels are all %s", s->name,
				   s->udp ? "gre-udp" : "gre", t->udp ? "gre-udp" : "gre");
	if (gre_hlen(s->gre_flags) > gre_hlen(t->gre_flags))
		return error_reply("tunnel '%s': its GRE header of %zu bytes does not fit the "
				   "tunnel MTU, made for %zu at start (start gregw with such a "
				   "tunnel in its file)",
				   s->name, gre_hlen(s->gre_flags), gre_hlen(t->gre_flags));
	return NULL;
}

static const char *const change_names[] = {
	[TUNFILE_ADD] = "add",
	[TUNFILE_REMOVE] = "remove",
	[TUNFILE_REPLACE] = "replace",
};

/* The list after change ch of s, at i (lower_bound of its name), into next (n2 tunnels). */
static void apply(const struct tunctl *t, enum tunfile_change ch, const struct tunnel_spec *s,
		  unsigned i, struct tunnel_spec *next)
{
	memcpy(next, t->specs, i * sizeof(*next));
	switch (ch) {
	case TUNFILE_ADD:
		next[i] = *s;
		memcpy(next + i + 1, t->specs + i, (t->n - i) * sizeof(*next));
		break;
	case TUNFILE_REMOVE:
		memcpy(next + i, t->specs + i + 1, (t->n - i - 1) * sizeof(*next));
		break;
	case TUNFILE_REPLACE:
		next[i] = *s;
		memcpy(next + i + 1, t->specs + i + 1, (t->n - i - 1) * sizeof(*next));
		break;
	}
}

/* Room for n tunnels in the list: doubled, so that a run of adds copies it a few times. */
static int grow(struct tunctl *t, unsigned n)
{
	unsigned cap = t->cap ? t->cap : 16;
	struct tunnel_spec *p;

	while (cap < n)
		cap *= 2;
	p = realloc(t->specs, cap * sizeof(*p));
	if (!p)
		return -ENOMEM;
	t->specs = p;
	t->cap = cap;
	return 0;
}

/* The list after change ch of s, at i (lower_bound of its name), in place (room for it made). */
static void apply_in_place(struct tunctl *t, enum tunfile_change ch, const struct tunnel_spec *s,
			   unsigned i)
{
	switch (ch) {
	case TUNFILE_ADD:
		memmove(t->specs + i + 1, t->specs + i, (t->n - i) * sizeof(*t->specs));
		t->specs[i] = *s;
		t->n++;
		break;
	case TUNFILE_REMOVE:
		memmove(t->specs + i, t->specs + i + 1, (t->n - i - 1) * sizeof(*t->specs));
		t->n--;
		break;
	case TUNFILE_REPLACE:
		t->specs[i] = *s;
		break;
	}
}

/* Whether a change made now could have its reply held: each held reply holds the table
 * before it back, and tunnels_pub_set refuses while TUNNELS_RETIRED_MAX of those wait, but
 * replies already in effect stay held until the next tunctl_retry. */
static bool room_to_make(const struct tunctl *t)
{
	return t->neffect < TUNNELS_RETIRED_MAX;
}

/*
 * tunfile_check_change of change ch of s against the tunnels in force, in time of the change
 * where the table in force has no nested prefixes: the rules are checked against the tunnels
 * that could break them alone, which the table finds (the one of s's name, of its peer and
 * key, and the one that holds the first address of each of its prefixes: without nesting, a
 * tunnel with one of s's prefixes owns that address), in the order of their names, so that
 * the first broken rule is the one the whole list would give.
 */
static int check_change(const struct tunctl *t, enum tunfile_change ch, const struct tunnel_spec *s,
			struct line_error *err)
{
	const struct tunnels *tab = tunnels_pub_current(t->pub);
	struct tunnel_spec some[TUNNEL_PREFIXES_MAX + 2];
	uint32_t idx[TUNNEL_PREFIXES_MAX + 2], at, i;
	unsigned m = 0, k = 0;

	if (tunnels_nested(tab) || tunnels_count(tab) != t->n ||
	    (ch == TUNFILE_ADD && t->n >= TUNNELS_MAX))
		return tunfile_check_change(t->specs, t->n, ch, s, err);
	at = lower_bound(t, s->name);
	if (at < t->n && strcmp(t->specs[at].name, s->name) == 0)
		idx[m++] = at;
	if (ch != TUNFILE_REMOVE && s->peer.family &&
	    tunnels_decap(tab, s->peer.family, s->peer.bytes, s->gre_flags & GRE_F_KEY,
			  s->gre_flags & GRE_F_KEY ? s->key : 0, &i) == DROP_NONE)
		idx[m++] = i;
	for (unsigned j = 0; ch != TUNFILE_REMOVE && j < s->nprefixes; j++) {
		i = tunnels_encap(tab, s->prefixes[j].addr.family, s->prefixes[j].addr.bytes);
		if (i != TUNNELS_NONE)
			idx[m++] = i;
	}
	/* In the order of the names, each once: a few, sorted by insertion. */
	for (unsigned a = 1; a < m; a++) {
		for (unsigned b = a; b > 0 && idx[b - 1] > idx[b]; b--) {
			i = idx[b];
			idx[b] = idx[b - 1];
			idx[b - 1] = i;
		}
	}
	for (unsigned a = 0; a < m; a++) {
		if (!a || idx[a] != idx[a - 1])
			some[k++] = t->specs[idx[a]];
	}
	return tunfile_check_change(some, k, ch, s, err);
}

/* Change ch of s made against the tunnels in force: its reply (*gen: the generation of the
 * table that made it, 0 for a refusal), or NULL with *busy when the workers still hold the
 * tables (nothing changed). */
static json_t *make(struct tunctl *t, enum tunfile_change ch, const struct tunnel_spec *s,
		    bool *busy, uint64_t *gen)
{
	struct line_error err;
	struct tunnel_spec *next;
	unsigned n2;
	json_t *o;
	int rc;

	*busy = false;
	*gen = 0;
	if (check_change(t, ch, s, &err))
		return error_reply("%s", err.msg);
	n2 = ch == TUNFILE_ADD ? t->n + 1 : ch == TUNFILE_REMOVE ? t->n - 1 : t->n;
	if (n2 > t->cap && grow(t, n2))
		return error_reply("out of memory");
	/* The table derived from the one in force, in time of the change; the whole list built
	 * again where the change's prefixes nest with others (tunnels_derive's -EAGAIN). */
	rc = tunnels_pub_change(t->pub, ch, s);
	if (rc == -EAGAIN) {
		next = malloc((n2 ? n2 : 1) * sizeof(*next));
		if (!next)
			return error_reply("out of memory");
		apply(t, ch, s, lower_bound(t, s->name), next);
		rc = tunnels_pub_set(t->pub, next, n2);
		free(next);
		t->rebuilds += !rc;
	}
	if (rc) {
		if (rc == -EBUSY) {
			t->busy_retries++;
			*busy = true;
			return NULL;
		}
		return error_reply("tunnel '%s' not changed: %s", s->name, strerror(-rc));
	}
	apply_in_place(t, ch, s, lower_bound(t, s->name));
	t->changes++;
	*gen = tunnels_gen(tunnels_pub_current(t->pub));
	o = json_object();
	if (!o)
		return NULL;
	jout_str(o, "changed", change_names[ch]);
	jout_str(o, "tunnel", s->name);
	jout_u64(o, "tunnels", t->n);
	jout_u64(o, "gen", *gen);
	return o;
}

/*
 * The reply o to change ch of s, made by the table of generation gen (0: a refusal), for
 * client id: o when it is in effect already, else held for tunctl_retry (NULL; true in
 * *held). A change is made only with room in the ring (room_to_make), so it never fills.
 */
static json_t *settle(struct tunctl *t, json_t *o, uint64_t gen, enum tunfile_change ch,
		      const char *name, uint64_t id, uint64_t now_ns, bool *held)
{
	struct tunctl_effect *e;

	*held = false;
	if (!o || !gen || gen <= tunnels_pub_settled(t->pub) || !room_to_make(t))
		return o;
	e = &t->effect[(t->effect_head + t->neffect++) % TUNNELS_RETIRED_MAX];
	*e = (struct tunctl_effect){
		.id = id, .gen = gen, .since_ns = now_ns, .ch = ch, .reply = o
	};
	snprintf(e->name, sizeof(e->name), "%s", name);
	t->effect_waits++;
	*held = true;
	return NULL;
}

static const char *const changed_words[] = {
	[TUNFILE_ADD] = "added",
	[TUNFILE_REMOVE] = "removed",
	[TUNFILE_REPLACE] = "replaced",
};

/* The reply to a change made that worker w's pass kept from taking effect TUNCTL_WAIT_MS:
 * the error, and what was made (e->reply's keys), which stays made. */
static json_t *stuck_reply(struct tunctl_effect *e, int w)
{
	json_t *o = error_reply("tunnel '%s' %s (gen %llu), but not known to be in effect: "
				"worker %d has not left its pass in %d ms",
				e->name, changed_words[e->ch], (unsigned long long)e->gen, w,
				TUNCTL_WAIT_MS);

	if (o && json_object_update(o, e->reply)) {
		json_decref(o);
		o = NULL;
	}
	json_decref(e->reply);
	e->reply = NULL;
	return o;
}

/* Keeps change ch of s for tunctl_retry; false when TUNCTL_WAIT_MAX wait already. */
static bool keep(struct tunctl *t, enum tunfile_change ch, const struct tunnel_spec *s, uint64_t id,
		 uint64_t now_ns)
{
	struct tunctl_wait *w;

	if (t->nwait == TUNCTL_WAIT_MAX)
		return false;
	w = &t->wait[(t->wait_head + t->nwait++) % TUNCTL_WAIT_MAX];
	*w = (struct tunctl_wait){ .id = id, .since_ns = now_ns, .ch = ch, .s = *s };
	return true;
}

/* The reply to a change kept TUNCTL_WAIT_MS in vain, or that found no room to wait. */
static json_t *busy_reply(const struct tunnel_spec *s)
{
	return error_reply("tunnel '%s' not changed: %s (the workers hold the tables before "
			   "it: try again)",
			   s->name, strerror(EBUSY));
}

/* A change of tunnel name (keys: its section's lines, ';' between them; NULL to remove):
 * made now, or kept (NULL, *later) behind the changes that wait or for the workers' passes. */
static json_t *change(struct tunctl *t, enum tunfile_change ch, const char *name, char *keys,
		      uint64_t id, uint64_t now_ns, bool *later)
{
	struct line_error err;
	struct tunnel_spec s = { 0 };
	json_t *o;
	bool busy = false;
	uint64_t gen;

	if (!t->from_file)
		return error_reply("gregw was started with --remote: its one tunnel is fixed "
				   "(start it with --tunnels FILE to change tunnels)");
	if (keys) {
		for (char *p = keys; *p; p++) {
			if (*p == ';')
				*p = '\n';
		}
		if (tunfile_parse_tunnel(name, keys, strlen(keys), t->any_address, &s, &err)) {
			if (err.line)
				return error_reply("tunnel '%s', key %d: %s", name, err.line,
						   err.msg);
			return error_reply("%s", err.msg);
		}
		o = unfit(t, &s);
		if (o)
			return o;
	} else if (snprintf(s.name, sizeof(s.name), "%s", name) >= (int)sizeof(s.name)) {
		return error_reply("no tunnel '%.*s'", TUNNEL_NAME_LEN, name);
	}
	/* Changes are made in the order they came: none passes one that waits. */
	if (!t->nwait && room_to_make(t)) {
		o = make(t, ch, &s, &busy, &gen);
		if (!busy)
			return settle(t, o, gen, ch, s.name, id, now_ns, later);
	}
	if (!keep(t, ch, &s, id, now_ns))
		return busy_reply(&s);
	*later = true;
	return NULL;
}

/* Gives the replies of the changes in effect by now, and those that waited in vain. */
static void give_settled(struct tunctl *t, uint64_t now_ns, tunctl_done_fn *done, void *arg)
{
	uint64_t settled = tunnels_pub_settled(t->pub);

	while (t->neffect) {
		struct tunctl_effect *e = &t->effect[t->effect_head];
		json_t *o = e->reply;

		if (e->gen > settled) {
			int w;

			if (now_ns - e->since_ns < (uint64_t)TUNCTL_WAIT_MS * NSEC_PER_MSEC)
				break;
			/* None: the pass ended just now, and the next reclaim frees its table. */
			w = tunnels_pub_holder(t->pub);
			if (w < 0) {
				settled = tunnels_pub_settled(t->pub);
				continue;
			}
			o = stuck_reply(e, w);
		}
		e->reply = NULL;
		t->effect_head = (t->effect_head + 1) % TUNNELS_RETIRED_MAX;
		t->neffect--;
		done(arg, e->id, o);
	}
}

unsigned tunctl_retry(struct tunctl *t, uint64_t now_ns, tunctl_done_fn *done, void *arg)
{
	give_settled(t, now_ns, done, arg);
	while (t->nwait && room_to_make(t)) {
		struct tunctl_wait *w = &t->wait[t->wait_head];
		bool busy, held;
		uint64_t gen;
		json_t *o = make(t, w->ch, &w->s, &busy, &gen);

		if (busy) {
			if (now_ns - w->since_ns < (uint64_t)TUNCTL_WAIT_MS * NSEC_PER_MSEC)
				break;
			o = busy_reply(&w->s);
			gen = 0;
		}
		t->wait_head = (t->wait_head + 1) % TUNCTL_WAIT_MAX;
		t->nwait--;
		o = settle(t, o, gen, w->ch, w->s.name, w->id, now_ns, &held);
		if (!held)
			done(arg, w->id, o);
	}
	return t->nwait + t->neffect;
}

/* The tunnel's received sequence numbers (RFC 2890), from the workers' windows of it: the
 * lowest and highest of the era most were taken in, and the numbers between them never
 * received; null before its first number. */
static json_t *seq_json(const struct tunctl *t, const struct tunnel *tn)
{
	struct seq_summary sum;
	json_t *o;

	tunnels_pub_seq(t->pub, tn->slot, &sum);
	if (!sum.any)
		return json_null();
	o = json_object();
	jout_u64(o, "lowest", sum.lowest);
	jout_u64(o, "highest", sum.highest);
	jout_u64(o, "lost", sum.lost);
	return o;
}

static json_t *tunnel_json(const struct tunctl *t, const struct tunnel_spec *s,
			   const struct tunnel *tn)
{
	char a[NETPREFIX_STRLEN];
	json_t *o = json_object(), *pre = json_array(), *drops = json_object();
	struct tunnel_stats sum;
	bool tap;

	tunnels_pub_stats(t->pub, tn->slot, &sum);
	jout_str(o, "name", s->name);
	jout_str(o, "peer", netaddr_format(&s->peer, a));
	/* whether, never which: the socket is no secret store (as the stats' config says) */
	jout_bool(o, "key", s->gre_flags & GRE_F_KEY);
	jout_bool(o, "seq", s->gre_flags & GRE_F_SEQ);
	jout_bool(o, "csum", s->gre_flags & GRE_F_CSUM);
	/* whether its superpackets go whole: the TAP in use, and it takes this tunnel's */
	tap = t->tap && tx_tap_takes(s->gre_flags, t->peer.family, s->peer.bytes, t->peer.bytes);
	jout_bool(o, "tap", tap);
	for (unsigned k = 0; k < s->nprefixes; k++)
		jout_append(pre, json_string(netaddr_format_prefix(&s->prefixes[k], a)));
	jout_set(o, "prefixes", pre);
	jout_u64(o, "tx_packets", sum.ctr[TUNNEL_TX_PACKETS]);
	jout_u64(o, "tx_bytes", sum.ctr[TUNNEL_TX_BYTES]);
	jout_u64(o, "rx_packets", sum.ctr[TUNNEL_RX_PACKETS]);
	jout_u64(o, "rx_bytes", sum.ctr[TUNNEL_RX_BYTES]);
	for (unsigned d = 0; d < TUNNEL_DROPS; d++)
		jout_u64(drops, drop_name(tunnels_drop_reason(d)), sum.drops[d]);
	jout_set(o, "drops", drops);
	jout_set(o, "rx_seq", seq_json(t, tn));
	return o;
}

/* "tunnels [FROM [COUNT]]": a page of the table in force, in the order of the names. */
static json_t *list(const struct tunctl *t, const char *args)
{
	const struct tunnels *tab = tunnels_pub_current(t->pub);
	uint64_t from = 0, count = TUNCTL_PAGE;
	char a[24] = "", b[24] = "", extra[2] = "";
	json_t *o, *arr;
	unsigned n = tunnels_count(tab);

	if (sscanf(args, "%23s %23s %1s", a, b, extra) > 2 ||
	    (a[0] && parse_u64(a, 0, TUNNELS_MAX, &from)) ||
	    (b[0] && parse_u64(b, 1, TUNCTL_PAGE_MAX, &count)))
		return error_reply("bad arguments '%s' for tunnels: expected FROM (0 to %d) and "
				   "COUNT (1 to %d)",
				   args, TUNNELS_MAX, TUNCTL_PAGE_MAX);
	o = json_object();
	arr = json_array();
	if (!o || !arr) {
		json_decref(o);
		json_decref(arr);
		return NULL;
	}
	jout_u64(o, "tunnels", n);
	jout_u64(o, "gen", tunnels_gen(tab));
	jout_u64(o, "from", from);
	for (uint64_t i = from; i < n && i < from + count; i++) {
		const struct tunnel *tn = tunnels_at(tab, (uint32_t)i);

		/* The table is the list's, both in the order of the names. */
		jout_append(arr, tunnel_json(t, &t->specs[i], tn));
	}
	jout_set(o, "list", arr);
	jout_u64(o, "next", from + count < n ? from + count : n);
	return o;
}

/* Whether cmd (len bytes) is word, alone or followed by a blank; *rest: what follows it. */
static bool is_word(const char *cmd, size_t len, const char *word, const char **rest)
{
	size_t w = strlen(word);

	if (len < w || memcmp(cmd, word, w) != 0 || (len > w && cmd[w] != ' '))
		return false;
	*rest = cmd + (len > w ? w + 1 : w);
	return true;
}

json_t *tunctl_command(struct tunctl *t, const char *cmd, size_t len, uint64_t id, uint64_t now_ns,
		       bool *handled, bool *later)
{
	char line[CTL_CMD_MAX + 1], name[TUNNEL_NAME_LEN + 1] = "";
	const char *rest;
	enum tunfile_change ch;
	int used = 0;

	*handled = true;
	*later = false;
	if (len > CTL_CMD_MAX || memchr(cmd, '\0', len)) {
		*handled = false;
		return NULL;
	}
	memcpy(line, cmd, len);
	line[len] = '\0';
	/* The control socket hands over CTL_CMD_MAX bytes of a longer line: a change cut short
	 * could still read as a tunnel, another than meant. */
	if (len == CTL_CMD_MAX &&
	    (is_word(line, len, "add", &rest) || is_word(line, len, "replace", &rest) ||
	     is_word(line, len, "remove", &rest)))
		return error_reply("line too long: at most %d bytes", CTL_CMD_MAX - 1);
	if (is_word(line, len, "tunnels", &rest))
		return list(t, rest);
	if (is_word(line, len, "add", &rest))
		ch = TUNFILE_ADD;
	else if (is_word(line, len, "replace", &rest))
		ch = TUNFILE_REPLACE;
	else if (is_word(line, len, "remove", &rest))
		ch = TUNFILE_REMOVE;
	else {
		*handled = false;
		return NULL;
	}
	/* The name, as long as a name may be and one byte more, for the reader to refuse. */
	_Static_assert(TUNNEL_NAME_LEN == 32, "the width of the name's conversion");
	if (sscanf(rest, "%32s%n", name, &used) != 1)
		return error_reply("%s: expected a tunnel's name", change_names[ch]);
	rest += used;
	while (*rest == ' ')
		rest++;
	if (ch == TUNFILE_REMOVE) {
		if (*rest)
			return error_reply("remove: unexpected '%s' after the name", rest);
		return change(t, ch, name, NULL, id, now_ns, later);
	}
	return change(t, ch, name, line + (rest - line), id, now_ns, later); /* within line */
}

json_t *tunctl_summary(const struct tunctl *t)
{
	json_t *o = json_object();

	jout_u64(o, "count", t->n);
	jout_u64(o, "gen", tunnels_gen(tunnels_pub_current(t->pub)));
	jout_bool(o, "changeable", t->from_file);
	jout_u64(o, "changes", t->changes);
	jout_u64(o, "busy_retries", t->busy_retries);
	jout_u64(o, "effect_waits", t->effect_waits);
	jout_u64(o, "rebuilds", t->rebuilds);
	return o;
}
