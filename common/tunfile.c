/*
 * The tunnel file (see tunfile.h): libinih splits "key = value" and strips comments; the line
 * reader (iniline.h) feeds it from memory and counts lines, and the section headers are taken
 * here, so that a header is checked where it stands. The rules across tunnels are checked once the file is
 * read, by sorting (a file of TUNNELS_MAX tunnels is checked in O(n log n)), and for one change
 * by a scan; both say the same words.
 */
#include "tunfile.h"

#include <errno.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gre.h"
#include "iniline.h"
#include "opt.h"
#include "parse.h"
#include "textfile.h"

enum key_id { K_PEER, K_KEY, K_PREFIXES, K_ENCAP, K_SEQ, K_CSUM, K_COUNT };

static const char *const key_names[K_COUNT] = { "peer", "key", "prefixes", "encap", "seq", "csum" };

struct parser {
	struct iniline in; /* what is left to read */
	int line;	   /* the line read last */
	bool any_address;
	struct line_error *err;
	int rc; /* 0 until the first refusal */
	/* The file's tunnels, or one tunnel alone (single: no sections). */
	struct tunfile *f;
	unsigned cap;
	bool single;
	struct tunnel_spec *spec; /* the one being read, NULL outside a section */
	struct tunfile_lines *lines;
	int seen[K_COUNT]; /* the line of each key given in this section */
};

/* Keeps the first refusal only (code, -errno): what follows it is noise. Returns 0. */
#define FAIL(ps, code, line, ...) \
	line_error_first((ps)->err, &(ps)->rc, (code), (line), __VA_ARGS__)

static bool name_ok(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n < TUNNEL_NAME_LEN &&
	       strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}

/* The rules, in one place for the file and for a change. */

static bool same_peer_key(const struct tunnel_spec *a, const struct tunnel_spec *b)
{
	bool ka = a->gre_flags & GRE_F_KEY, kb = b->gre_flags & GRE_F_KEY;

	return netaddr_equal(&a->peer, &b->peer) && ka == kb && (!ka || a->key == b->key);
}

static bool same_prefix(const struct netprefix *a, const struct netprefix *b)
{
	return a->len == b->len && netaddr_equal(&a->addr, &b->addr);
}

static bool prefixes_overlap(const struct netprefix *a, const struct netprefix *b)
{
	return a->addr.family == b->addr.family &&
	       (netaddr_prefix_within(a, b) || netaddr_prefix_within(b, a));
}

/* " (line N)" for a place in the file, nothing for a tunnel of the control socket's. */
static const char *at_line(int line, char *buf, size_t size)
{
	if (line > 0)
		snprintf(buf, size, " (line %d)", line);
	else
		buf[0] = '\0';
	return buf;
}

static int say_same_name(struct line_error *err, int line, const char *name, int other_line)
{
	char at[32];

	return line_error_set(err, -EEXIST, line, "duplicate tunnel '%s'%s", name,
			      at_line(other_line, at, sizeof(at)));
}

static int say_same_peer_key(struct line_error *err, int line, const struct tunnel_spec *s,
			     const struct tunnel_spec *other, int other_line)
{
	char peer[NETADDR_STRLEN], key[24] = "without a key", at[32];

	if (s->gre_flags & GRE_F_KEY)
		snprintf(key, sizeof(key), "key %u", s->key);
	return line_error_set(err, -EEXIST, line,
			      "tunnel '%s': peer %s %s is tunnel '%s''s already%s: a packet could "
			      "not tell them apart",
			      s->name, netaddr_format(&s->peer, peer), key, other->name,
			      at_line(other_line, at, sizeof(at)));
}

static int say_same_prefix(struct line_error *err, int line, const struct tunnel_spec *s,
			   const struct netprefix *p, const struct tunnel_spec *other,
			   int other_line)
{
	char text[NETPREFIX_STRLEN], at[32];

	return line_error_set(
		err, -EEXIST, line, "tunnel '%s': prefix %s is tunnel '%s''s already%s", s->name,
		netaddr_format_prefix(p, text), other->name, at_line(other_line, at, sizeof(at)));
}

/* The rules a tunnel keeps on its own (the file checks them as it reads). */
static int check_alone(const struct tunnel_spec *s, const struct tunfile_lines *l,
		       struct line_error *err)
{
	char a[NETPREFIX_STRLEN], b[NETPREFIX_STRLEN], at[32];

	if (!s->peer.family)
		return line_error_set(err, -EINVAL, l ? l->section : 0, "tunnel '%s' has no peer",
				      s->name);
	if (!s->nprefixes)
		return line_error_set(
			err, -EINVAL, l ? l->section : 0,
			"tunnel '%s' has no prefixes: nothing would go into it or come from it",
			s->name);
	for (unsigned i = 1; i < s->nprefixes; i++) {
		for (unsigned j = 0; j < i; j++) {
			if (!prefixes_overlap(&s->prefixes[i], &s->prefixes[j]))
				continue;
			return line_error_set(err, -EINVAL, l ? l->prefixes[i] : 0,
					      "tunnel '%s': prefix %s overlaps its prefix %s%s",
					      s->name, netaddr_format_prefix(&s->prefixes[i], a),
					      netaddr_format_prefix(&s->prefixes[j], b),
					      at_line(l ? l->prefixes[j] : 0, at, sizeof(at)));
		}
	}
	return 0;
}

int tunfile_check_change(const struct tunnel_spec *set, unsigned n, enum tunfile_change change,
			 const struct tunnel_spec *s, struct line_error *err)
{
	unsigned at = n;
	int rc;

	memset(err, 0, sizeof(*err));
	for (unsigned i = 0; i < n && at == n; i++) {
		if (strcmp(set[i].name, s->name) == 0)
			at = i;
	}
	if (change == TUNFILE_ADD && at < n)
		return say_same_name(err, 0, s->name, 0);
	if (change != TUNFILE_ADD && at == n)
		return line_error_set(err, -ENOENT, 0, "no tunnel '%s'", s->name);
	if (change == TUNFILE_REMOVE)
		return 0;
	if (change == TUNFILE_ADD && n >= TUNNELS_MAX)
		return line_error_set(err, -E2BIG, 0, "too many tunnels: at most %d", TUNNELS_MAX);
	if (!name_ok(s->name))
		return line_error_set(
			err, -EINVAL, 0,
			"bad tunnel name '%.*s': use 1 to %d letters, digits, '_' or '-'",
			TUNNEL_NAME_LEN, s->name, TUNNEL_NAME_LEN - 1);
	rc = check_alone(s, NULL, err);
	if (rc)
		return rc;
	for (unsigned i = 0; i < n; i++) {
		if (i == at)
			continue; /* the tunnel a replace replaces */
		if (same_peer_key(s, &set[i]))
			return say_same_peer_key(err, 0, s, &set[i], 0);
		for (unsigned j = 0; j < s->nprefixes; j++) {
			for (unsigned k = 0; k < set[i].nprefixes; k++) {
				if (same_prefix(&s->prefixes[j], &set[i].prefixes[k]))
					return say_same_prefix(err, 0, s, &s->prefixes[j], &set[i],
							       0);
			}
		}
	}
	return 0;
}

/* Reading. */

static int set_peer(struct parser *ps, const char *v)
{
	struct netprefix p;

	if (netaddr_parse(v, &ps->spec->peer))
		return FAIL(ps, -EINVAL, ps->line,
			    "bad value '%s' for peer: expected an IPv4 or IPv6 address", v);
	p.addr = ps->spec->peer;
	p.len = netaddr_len(p.addr.family) * 8;
	if (!ps->any_address && !netaddr_prefix_is_bench(&p))
		return FAIL(ps, -EINVAL, ps->line,
			    "peer %s " OPT_OUTSIDE_BENCH " (--any-address allows it)", v);
	return 1;
}

static int set_key(struct parser *ps, const char *v)
{
	uint64_t n;

	if (parse_u64(v, 0, UINT32_MAX, &n))
		return FAIL(ps, -EINVAL, ps->line, "bad value '%s' for key: expected 0 to %u", v,
			    UINT32_MAX);
	ps->spec->gre_flags |= GRE_F_KEY;
	ps->spec->key = (uint32_t)n;
	return 1;
}

static int add_prefix(struct parser *ps, const char *v)
{
	struct tunnel_spec *s = ps->spec;
	struct netprefix p;

	if (netaddr_parse_prefix(v, &p) || !strchr(v, '/'))
		return FAIL(ps, -EINVAL, ps->line, "bad prefix '%s': expected ADDR/LEN", v);
	if (netaddr_prefix_has_host_bits(&p))
		return FAIL(ps, -EINVAL, ps->line, "prefix '%s' has host bits set", v);
	if (!ps->any_address && !netaddr_prefix_is_bench(&p))
		return FAIL(ps, -EINVAL, ps->line,
			    "prefix %s " OPT_OUTSIDE_BENCH " (--any-address allows it)", v);
	if (s->nprefixes >= TUNNEL_PREFIXES_MAX)
		return FAIL(ps, -EINVAL, ps->line, "tunnel '%s': too many prefixes: at most %d",
			    s->name, TUNNEL_PREFIXES_MAX);
	ps->lines->prefixes[s->nprefixes] = ps->line;
	s->prefixes[s->nprefixes++] = p;
	return 1;
}

/* "a/n, b/n c/n": commas or blanks between them. */
static int set_prefixes(struct parser *ps, const char *v)
{
	char buf[256], *tok, *save = NULL;

	if (strlen(v) >= sizeof(buf))
		return FAIL(ps, -EINVAL, ps->line, "prefixes too long");
	snprintf(buf, sizeof(buf), "%s", v);
	for (tok = strtok_r(buf, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
		if (!add_prefix(ps, tok))
			return 0;
	}
	return 1;
}

static int set_flag(struct parser *ps, const char *key, const char *v, unsigned flag)
{
	bool on;

	if (parse_bool(v, &on))
		return FAIL(ps, -EINVAL, ps->line, "bad value '%s' for %s: expected yes or no", v,
			    key);
	if (on)
		ps->spec->gre_flags |= flag;
	else
		ps->spec->gre_flags &= ~flag;
	return 1;
}

static int on_key(void *user, const char *section, const char *name, const char *value)
{
	struct parser *ps = user;
	int k;

	(void)section;
	if (ps->rc)
		return 0;
	if (!ps->spec)
		return FAIL(ps, -EINVAL, ps->line, "key '%s' outside a [tunnel NAME] section",
			    name);
	for (k = 0; k < K_COUNT && strcmp(key_names[k], name) != 0; k++)
		;
	if (k == K_COUNT)
		return FAIL(ps, -EINVAL, ps->line,
			    "unknown key '%s' in tunnel '%s': expected peer, key, prefixes, encap, "
			    "seq or csum",
			    name, ps->spec->name);
	/* Last-wins would hide a mistake; only prefixes accumulate. */
	if (ps->seen[k] && k != K_PREFIXES)
		return FAIL(ps, -EINVAL, ps->line,
			    "duplicate key '%s' in tunnel '%s' (first at line %d)", name,
			    ps->spec->name, ps->seen[k]);
	ps->seen[k] = ps->line;
	if (!*value)
		return FAIL(ps, -EINVAL, ps->line, "key '%s' has no value", name);
	switch (k) {
	case K_PEER:
		ps->lines->peer = ps->line;
		return set_peer(ps, value);
	case K_KEY:
		ps->lines->key = ps->line;
		return set_key(ps, value);
	case K_PREFIXES:
		return set_prefixes(ps, value);
	case K_ENCAP:
		if (strcmp(value, "gre") == 0)
			ps->spec->udp = false;
		else if (strcmp(value, "gre-udp") == 0)
			ps->spec->udp = true;
		else
			return FAIL(ps, -EINVAL, ps->line,
				    "bad value '%s' for encap: expected gre or gre-udp", value);
		return 1;
	case K_SEQ:
		return set_flag(ps, name, value, GRE_F_SEQ);
	default:
		return set_flag(ps, name, value, GRE_F_CSUM);
	}
}

/* The section read last is whole: the rules of a tunnel on its own. */
static void end_section(struct parser *ps)
{
	if (!ps->spec || ps->rc)
		return;
	if (check_alone(ps->spec, ps->lines, ps->err))
		ps->rc = -EINVAL;
}

/* "[tunnel NAME]" with the brackets removed and blanks trimmed. */
static void begin_section(struct parser *ps, char *text)
{
	struct tunfile *f = ps->f;
	char *kind, *name, *extra, *save = NULL;

	end_section(ps);
	if (ps->rc)
		return;
	kind = strtok_r(text, " \t", &save);
	name = kind ? strtok_r(NULL, " \t", &save) : NULL;
	extra = name ? strtok_r(NULL, " \t", &save) : NULL;
	if (!kind || strcmp(kind, "tunnel") != 0 || !name || extra) {
		FAIL(ps, -EINVAL, ps->line, "bad section header: expected [tunnel NAME]");
		return;
	}
	if (!name_ok(name)) {
		FAIL(ps, -EINVAL, ps->line,
		     "bad tunnel name '%s': use 1 to %d letters, digits, '_' or '-'", name,
		     TUNNEL_NAME_LEN - 1);
		return;
	}
	if (f->n >= TUNNELS_MAX) {
		FAIL(ps, -E2BIG, ps->line, "too many tunnels: at most %d", TUNNELS_MAX);
		return;
	}
	if (f->n == ps->cap) {
		unsigned cap = ps->cap ? 2 * ps->cap : 64;
		struct tunnel_spec *specs = realloc(f->specs, cap * sizeof(*specs));
		struct tunfile_lines *lines;

		if (specs)
			f->specs = specs;
		lines = specs ? realloc(f->lines, cap * sizeof(*lines)) : NULL;
		if (!lines) {
			FAIL(ps, -ENOMEM, ps->line, "out of memory");
			return;
		}
		f->lines = lines;
		ps->cap = cap;
	}
	ps->spec = &f->specs[f->n];
	ps->lines = &f->lines[f->n++];
	memset(ps->spec, 0, sizeof(*ps->spec));
	memset(ps->lines, 0, sizeof(*ps->lines));
	memset(ps->seen, 0, sizeof(ps->seen));
	snprintf(ps->spec->name, sizeof(ps->spec->name), "%s", name);
	ps->lines->section = ps->line;
}

/* libinih's reader: a line at a time (iniline.h); section headers taken here. */
static char *read_line(char *str, int num, void *stream)
{
	struct parser *ps = stream;
	char why[sizeof(ps->err->msg)];
	enum iniline_kind k;

	if (ps->rc)
		return NULL;
	k = iniline_next(&ps->in, str, num, why, sizeof(why));
	ps->line = ps->in.line;
	if (k == INILINE_BAD || (k == INILINE_SECTION && ps->single)) {
		FAIL(ps, -EINVAL, ps->line, "%s",
		     k == INILINE_BAD ? why : "a section header in one tunnel's keys");
		return NULL;
	}
	if (k == INILINE_SECTION) {
		begin_section(ps, str);
		return ps->rc ? NULL : iniline_section_mark(str, num);
	}
	return k == INILINE_TEXT ? str : NULL;
}

/* Runs libinih over what ps holds, and ends the last section. */
static int run(struct parser *ps)
{
	int rc = ini_parse_stream(read_line, ps, on_key, ps);

	/* libinih reports its own first error (a line with no '=') by number only, and reads
	 * on: a refusal of ours after it is not the first. */
	if (rc > 0 && (!ps->rc || rc < ps->err->line)) {
		ps->rc = 0;
		FAIL(ps, -EINVAL, rc, "expected 'key = value' or [tunnel NAME]");
	}
	if (rc < 0 && !ps->rc)
		FAIL(ps, -ENOMEM, 0, "cannot parse: libinih error %d", rc);
	end_section(ps);
	return ps->rc;
}

/* Sorting for the rules across tunnels. */

struct ref {
	const struct tunnel_spec *s;
	const struct tunfile_lines *l;
	unsigned prefix; /* for the prefix rule */
};

static int by_name(const void *a, const void *b)
{
	const struct ref *x = a, *y = b;
	int c = strcmp(x->s->name, y->s->name);

	return c ? c : (x->l->section > y->l->section) - (x->l->section < y->l->section);
}

static int by_peer_key(const void *a, const void *b)
{
	const struct ref *x = a, *y = b;
	const struct tunnel_spec *s = x->s, *t = y->s;
	unsigned ks = s->gre_flags & GRE_F_KEY, kt = t->gre_flags & GRE_F_KEY;
	int c;

	if (s->peer.family != t->peer.family)
		return s->peer.family < t->peer.family ? -1 : 1;
	c = memcmp(s->peer.bytes, t->peer.bytes, sizeof(s->peer.bytes));
	if (c)
		return c;
	if (ks != kt)
		return ks < kt ? -1 : 1;
	if (ks && s->key != t->key)
		return s->key < t->key ? -1 : 1;
	return (x->l->section > y->l->section) - (x->l->section < y->l->section);
}

static int by_prefix(const void *a, const void *b)
{
	const struct ref *x = a, *y = b;
	const struct netprefix *p = &x->s->prefixes[x->prefix], *q = &y->s->prefixes[y->prefix];
	int c;

	if (p->addr.family != q->addr.family)
		return p->addr.family < q->addr.family ? -1 : 1;
	c = memcmp(p->addr.bytes, q->addr.bytes, sizeof(p->addr.bytes));
	if (c)
		return c;
	if (p->len != q->len)
		return p->len < q->len ? -1 : 1;
	return (x->l->section > y->l->section) - (x->l->section < y->l->section);
}

/* Of the refusals found, the one at the earliest line. */
static void keep_first(struct line_error *best, int *best_rc, const struct line_error *e, int rc)
{
	if (!*best_rc || e->line < best->line) {
		*best = *e;
		*best_rc = rc;
	}
}

/*
 * Names, peers and keys, prefixes: each sorted, so that two alike sit side by side, the later
 * in the file second; of all the pairs, the one whose later line comes first is reported.
 */
static int check_across(const struct tunfile *f, struct line_error *err)
{
	struct line_error e;
	unsigned nrefs = 0, npfx = 0;
	struct ref *r;
	int rc = 0;

	for (unsigned i = 0; i < f->n; i++)
		npfx += f->specs[i].nprefixes;
	r = malloc((npfx > f->n ? npfx : f->n ? f->n : 1) * sizeof(*r));
	if (!r)
		return -ENOMEM;
	for (unsigned i = 0; i < f->n; i++)
		r[i] = (struct ref){ .s = &f->specs[i], .l = &f->lines[i] };
	qsort(r, f->n, sizeof(*r), by_name);
	for (unsigned i = 1; i < f->n; i++) {
		if (strcmp(r[i].s->name, r[i - 1].s->name) == 0) {
			say_same_name(&e, r[i].l->section, r[i].s->name, r[i - 1].l->section);
			keep_first(err, &rc, &e, -EEXIST);
		}
	}
	qsort(r, f->n, sizeof(*r), by_peer_key);
	for (unsigned i = 1; i < f->n; i++) {
		const struct ref *a = &r[i - 1], *b = &r[i];

		if (same_peer_key(a->s, b->s)) {
			say_same_peer_key(&e, b->l->key ? b->l->key : b->l->peer, b->s, a->s,
					  a->l->key ? a->l->key : a->l->peer);
			keep_first(err, &rc, &e, -EEXIST);
		}
	}
	for (unsigned i = 0; i < f->n; i++) {
		for (unsigned j = 0; j < f->specs[i].nprefixes; j++)
			r[nrefs++] =
				(struct ref){ .s = &f->specs[i], .l = &f->lines[i], .prefix = j };
	}
	qsort(r, nrefs, sizeof(*r), by_prefix);
	for (unsigned i = 1; i < nrefs; i++) {
		const struct ref *a = &r[i - 1], *b = &r[i];

		/* Twice in one tunnel is its own overlap, refused as it was read. */
		if (a->s != b->s &&
		    same_prefix(&a->s->prefixes[a->prefix], &b->s->prefixes[b->prefix])) {
			say_same_prefix(&e, b->l->prefixes[b->prefix], b->s,
					&b->s->prefixes[b->prefix], a->s,
					a->l->prefixes[a->prefix]);
			keep_first(err, &rc, &e, -EEXIST);
		}
	}
	free(r);
	/* The file's refusals are all bad input: the caller's exit status is 2 whatever
	 * the rule. */
	return rc ? -EINVAL : 0;
}

int tunfile_parse(const char *text, size_t len, bool any_address, struct tunfile *out,
		  struct line_error *err)
{
	struct parser ps = {
		.in = { .p = text, .end = text + len },
		.any_address = any_address,
		.err = err,
		.f = out,
	};
	int rc;

	memset(out, 0, sizeof(*out));
	memset(err, 0, sizeof(*err));
	rc = run(&ps);
	return rc ? rc : check_across(out, err);
}

void tunfile_free(struct tunfile *f)
{
	free(f->specs);
	free(f->lines);
	memset(f, 0, sizeof(*f));
}

int tunfile_parse_tunnel(const char *name, const char *text, size_t len, bool any_address,
			 struct tunnel_spec *out, struct line_error *err)
{
	struct tunfile one = { .specs = out };
	struct tunfile_lines lines = { 0 };
	struct parser ps = {
		.in = { .p = text, .end = text + len },
		.any_address = any_address,
		.err = err,
		.f = &one,
		.single = true,
		.spec = out,
		.lines = &lines,
	};

	memset(out, 0, sizeof(*out));
	memset(err, 0, sizeof(*err));
	if (!name_ok(name)) {
		FAIL(&ps, -EINVAL, 0,
		     "bad tunnel name '%.*s': use 1 to %d letters, digits, '_' or '-'",
		     TUNNEL_NAME_LEN, name, TUNNEL_NAME_LEN - 1);
		return ps.rc;
	}
	snprintf(out->name, sizeof(out->name), "%s", name);
	return run(&ps);
}

int tunfile_load(const char *path, bool any_address, struct tunfile *out, struct line_error *err)
{
	char *buf;
	size_t len;
	int rc;

	memset(out, 0, sizeof(*out));
	memset(err, 0, sizeof(*err));
	rc = textfile_read(path, TUNFILE_MAX, &buf, &len, err->msg, sizeof(err->msg));
	if (rc)
		return rc;
	rc = tunfile_parse(buf, len, any_address, out, err);
	free(buf);
	return rc;
}
