/*
 * The --pairs file (see pairs.h): a line at a time, each checked where it stands.
 */
#include "pairs.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "opt.h"
#include "textfile.h"
#include "traffic_limits.h"

/* One address of a line, parsed and held to the ranges. */
static int address(const char *what, const char *tok, bool any, struct netaddr *a,
		   struct line_error *err, int line)
{
	struct netprefix p;

	if (netaddr_parse(tok, a))
		return line_error_set(err, -EINVAL, line,
				      "bad %s address '%s': expected an IPv4 or IPv6 address", what,
				      tok);
	p.addr = *a;
	p.len = netaddr_len(a->family) * 8;
	if (!any && !netaddr_prefix_is_bench(&p))
		return line_error_set(
			err, -EINVAL, line,
			"%s address %s " OPT_OUTSIDE_BENCH " (--any-address allows it)", what, tok);
	return 0;
}

/* One line, its comment cut off: nothing, or a pair into *out (returns 1). */
static int pair_line(char *s, bool any, struct traffic_pair *out, struct line_error *err, int line)
{
	static const char blanks[] = " \t\r\v\f";
	char *tok[3], *save = NULL, *hash = strchr(s, '#');
	int ntok = 0, rc;

	if (hash)
		*hash = '\0';
	for (char *t = strtok_r(s, blanks, &save); t; t = strtok_r(NULL, blanks, &save)) {
		if (ntok == 3)
			break;
		tok[ntok++] = t;
	}
	if (ntok == 0)
		return 0;
	if (ntok != 2)
		return line_error_set(err, -EINVAL, line,
				      "expected 'LOCAL REMOTE': two addresses, found %s",
				      ntok == 1 ? "one" : "more");
	rc = address("local", tok[0], any, &out->local, err, line);
	if (!rc)
		rc = address("remote", tok[1], any, &out->remote, err, line);
	if (rc)
		return rc;
	if (out->local.family != out->remote.family)
		return line_error_set(err, -EINVAL, line,
				      "local %s and remote %s are not of one family", tok[0],
				      tok[1]);
	return 1;
}

int pairs_parse(const char *text, size_t len, bool any_address, struct traffic_pair *out,
		unsigned *n, struct line_error *err)
{
	const char *p = text, *end = text + len;
	char buf[TRAFFIC_PAIRS_LINE_MAX + 1];
	int line = 0;

	*n = 0;
	memset(err, 0, sizeof(*err));
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = (size_t)((nl ? nl : end) - p);
		int rc;

		line++;
		/* A NUL would end the line early, and what follows it would go unread. */
		if (memchr(p, '\0', l))
			return line_error_set(err, -EINVAL, line, "a NUL byte: not a text file");
		if (l > TRAFFIC_PAIRS_LINE_MAX)
			return line_error_set(err, -EINVAL, line, "line longer than %d bytes",
					      TRAFFIC_PAIRS_LINE_MAX);
		memcpy(buf, p, l);
		buf[l] = '\0';
		p = nl ? nl + 1 : end;
		if (*n == TRAFFIC_PAIRS_MAX) {
			struct traffic_pair extra;

			rc = pair_line(buf, any_address, &extra, err, line);
			if (rc > 0)
				return line_error_set(
					err, -EINVAL, line,
					"more than %d pairs: one a tunnel, as many as gregw's "
					"table holds",
					TRAFFIC_PAIRS_MAX);
		} else {
			rc = pair_line(buf, any_address, &out[*n], err, line);
			if (rc > 0)
				(*n)++;
		}
		if (rc < 0)
			return rc;
	}
	if (!*n)
		return line_error_set(err, -EINVAL, 0,
				      "no pairs: expected lines of 'LOCAL REMOTE'");
	return 0;
}

int pairs_load(const char *path, bool any_address, struct traffic_pair **out, unsigned *n)
{
	struct line_error err = { 0 };
	/* The path opened, so it is shorter than PATH_MAX: the line is never cut. */
	char line[PATH_MAX + sizeof(err.msg) + 16];
	char *text;
	size_t len;
	int rc;

	*out = NULL;
	*n = 0;
	rc = textfile_read(path, TRAFFIC_PAIRS_FILE_MAX, &text, &len, err.msg, sizeof(err.msg));
	if (rc) {
		log_warnx("--pairs %s: %s", path, err.msg);
		return -EINVAL;
	}
	*out = malloc(TRAFFIC_PAIRS_MAX * sizeof(**out));
	rc = *out ? pairs_parse(text, len, any_address, *out, n, &err) : -ENOMEM;
	free(text);
	if (rc == -ENOMEM)
		log_warnx("--pairs %s: out of memory", path);
	else if (rc)
		log_warnx("--pairs %s", line_error_text(path, &err, line, sizeof(line)));
	if (rc) {
		free(*out);
		*out = NULL;
		*n = 0;
		return -EINVAL;
	}
	return 0;
}
