/*
 * gregw's tunnel file (docs/gregw.md, "Many tunnels"): INI read with libinih, one
 * `[tunnel NAME]` section a tunnel with its peer, key, inner prefixes and options; and the
 * rules a set of tunnels keeps, the same for the file and for a change through gregw's control
 * socket. gregw reads it, and tunbed-wire to audit each tunnel's frames. Pure but for
 * tunfile_load: no logging; every refusal is one line in a line_error (line_error.h).
 */
#ifndef TUNBED_TUNFILE_H
#define TUNBED_TUNFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "line_error.h"
#include "netaddr.h"

/* The file's limits, for every program that reads it. */
enum tunfile_limits {
	TUNNELS_MAX = 16384,	 /* tunnels at once: issue 34's largest point is 10,000, as
				  * FD.io CSIT's for WireGuard; 2^14 is what the bed's address
				  * pools hold (topo/tunnels.sh), and each gregw worker's
				  * counters take TUNNELS_MAX x 128 bytes, 2 MiB */
	TUNNEL_PREFIXES_MAX = 8, /* inner prefixes of one tunnel: a site has one or two of each
				  * family; gregw's table holds TUNNELS_MAX x this at most */
	TUNNEL_NAME_LEN = 32,	 /* a tunnel's name and its NUL, as a topology's host names */
	TUNFILE_MAX = 16 << 20,	 /* a tunnel file: TUNNELS_MAX sections of up to ten lines
				  * (eight IPv6 prefixes a line each) is about 10 MB */
};

/* One tunnel as the tunnel file or gregw's control socket gives it. */
struct tunnel_spec {
	char name[TUNNEL_NAME_LEN]; /* what the tunnel is: a replace keeps its counters */
	struct netaddr peer;	    /* outer address of the far end */
	unsigned gre_flags;	    /* GRE_F_KEY, GRE_F_SEQ, GRE_F_CSUM (gre.h) */
	uint32_t key;		    /* with GRE_F_KEY */
	bool udp;		    /* GRE-in-UDP (RFC 8086), else GRE over IP */
	unsigned nprefixes;
	struct netprefix prefixes[TUNNEL_PREFIXES_MAX]; /* inner: routed into the tunnel, and
							 * the sources allowed from its peer */
};

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

/*
 * Parses len bytes of text (not NUL-terminated) into *out, which the caller frees with
 * tunfile_free, also after a failure. any_address: peers and prefixes may lie outside the
 * benchmarking ranges. Returns 0, -EINVAL with *err (a bad line, a bad value, a tunnel that
 * breaks a rule: the first one found), -E2BIG (more than TUNNELS_MAX tunnels) or -ENOMEM.
 */
int tunfile_parse(const char *text, size_t len, bool any_address, struct tunfile *out,
		  struct line_error *err);

/*
 * Reads the regular file path (at most TUNFILE_MAX bytes; a FIFO or device is refused, as is
 * a file that cannot be read, with line 0) and parses it. Returns tunfile_parse's values or
 * -errno of the read.
 */
int tunfile_load(const char *path, bool any_address, struct tunfile *out, struct line_error *err);

void tunfile_free(struct tunfile *f);

/*
 * One tunnel's keys as the control socket takes them: "key = value" lines without a section
 * header (the same keys and values as a section of the file), for the tunnel name. Returns 0
 * with *out, or -EINVAL with *err (its line within text).
 */
int tunfile_parse_tunnel(const char *name, const char *text, size_t len, bool any_address,
			 struct tunnel_spec *out, struct line_error *err);

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
			 const struct tunnel_spec *s, struct line_error *err);

#endif
