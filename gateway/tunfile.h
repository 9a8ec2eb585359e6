/*
 * gregw's tunnel file (docs/gregw.md, "Many tunnels"): INI read with libinih, one
 * `[tunnel NAME]` section a tunnel with its peer, key, inner prefixes and options; and the
 * rules a set of tunnels keeps, the same for the file and for a change through the control
 * socket. Pure but for tunfile_load: no logging; every refusal is one line in a tunfile_error.
 */
#ifndef TUNBED_GW_TUNFILE_H
#define TUNBED_GW_TUNFILE_H

#include <stdbool.h>
#include <stddef.h>

#include "gw_limits.h"
#include "tunnels.h"

/* Where a tunnel's values were in the file (0: not given). */
struct tunfile_lines {
	int section, peer, key;
	int prefixes[TUNNEL_PREFIXES_MAX];
};

/* A file's tunnels, in file order. */
struct tunfile {
	unsigned n;
	struct tunnel_spec *specs;
	struct tunfile_lines *lines;
};

/* A refusal: the line it is about (0: the file, or a change, as a whole) and why. */
struct tunfile_error {
	int line;
	char msg[320];
};

/*
 * Parses len bytes of text (not NUL-terminated) into *out, which the caller frees with
 * tunfile_free, also after a failure. any_address: peers and prefixes may lie outside the
 * benchmarking ranges. Returns 0, -EINVAL with *err (a bad line, a bad value, a tunnel that
 * breaks a rule: the first one found), -E2BIG (more than TUNNELS_MAX tunnels) or -ENOMEM.
 */
int tunfile_parse(const char *text, size_t len, bool any_address, struct tunfile *out,
		  struct tunfile_error *err);

/*
 * Reads the regular file path (at most TUNFILE_MAX bytes; a FIFO or device is refused, as is
 * a file that cannot be read, with line 0) and parses it. Returns tunfile_parse's values or
 * -errno of the read.
 */
int tunfile_load(const char *path, bool any_address, struct tunfile *out,
		 struct tunfile_error *err);

void tunfile_free(struct tunfile *f);

/* The one line a refusal of file path gets: "PATH:LINE: MESSAGE", or "PATH: MESSAGE" about the
 * whole file, into buf (size bytes, cut as snprintf cuts); returns buf. Pure. */
const char *tunfile_error_line(const char *path, const struct tunfile_error *err, char *buf,
			       size_t size);

/*
 * One tunnel's keys as the control socket takes them: "key = value" lines without a section
 * header (the same keys and values as a section of the file), for the tunnel name. Returns 0
 * with *out, or -EINVAL with *err (its line within text).
 */
int tunfile_parse_tunnel(const char *name, const char *text, size_t len, bool any_address,
			 struct tunnel_spec *out, struct tunfile_error *err);

enum tunfile_change {
	TUNFILE_ADD,	 /* a tunnel of a new name */
	TUNFILE_REMOVE,	 /* the tunnel of s's name (only the name counts) */
	TUNFILE_REPLACE, /* the tunnel of s's name, by s */
};

/*
 * Whether change may be made to the n tunnels of set, s's range checks already passed
 * (tunfile_parse_tunnel): 0, or with *err (line 0) -ENOENT (no tunnel of that name to remove or
 * replace), -EEXIST (a name to add that is there, or s on the peer and key of another tunnel, or
 * with a prefix another has), -E2BIG (TUNNELS_MAX tunnels already), -EINVAL (s breaks a rule
 * on its own). The rules are the file's. Pure; O(n).
 */
int tunfile_check_change(const struct tunnel_spec *set, unsigned n, enum tunfile_change change,
			 const struct tunnel_spec *s, struct tunfile_error *err);

#endif
