/*
 * tunbed-traffic's --pairs file: the address pairs a client spreads its TCP sessions over, one
 * "LOCAL REMOTE" a line, so that one process drives sessions across many tunnels (session i
 * takes pair i mod n). Pure but for pairs_load.
 */
#ifndef TUNBED_TR_PAIRS_H
#define TUNBED_TR_PAIRS_H

#include <stdbool.h>
#include <stddef.h>

#include "line_error.h"
#include "netaddr.h"

struct traffic_pair {
	struct netaddr local;  /* the session's socket binds to it */
	struct netaddr remote; /* and connects to it, on the server's port */
};

/*
 * Parses text (len bytes, NUL bytes refused): blank lines and '#' comments skipped, every
 * other line two addresses of one family, both in the benchmarking ranges unless any_address.
 * out must hold TRAFFIC_PAIRS_MAX pairs; *n gets how many were read. Returns 0, or -EINVAL with
 * *err saying where and what (a file without a pair too).
 */
int pairs_parse(const char *text, size_t len, bool any_address, struct traffic_pair *out,
		unsigned *n, struct line_error *err);

/*
 * Reads and parses the file path (at most TRAFFIC_PAIRS_FILE_MAX bytes, a regular file) into
 * *out, malloc'd, which the caller frees. Returns 0, or -EINVAL after logging one line
 * "PATH:LINE: what" (or "PATH: what" for the file as a whole).
 */
int pairs_load(const char *path, bool any_address, struct traffic_pair **out, unsigned *n);

#endif
