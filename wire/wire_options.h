/*
 * tunbed-wire's command line (docs/wire.md).
 */
#ifndef TUNBED_WIRE_OPTIONS_H
#define TUNBED_WIRE_OPTIONS_H

#include <stdbool.h>

#include "wire_limits.h"
#include "privs.h"
#include "wire_capture.h"
#include "wire_decode.h"

enum {
	WIRE_EXIT_VIOLATIONS = 3, /* --check and a frame broke an expectation */
};

struct wire_options {
	struct wire_capture_cfg cap;
	struct wire_expect expect;
	bool json;
	bool check;
	unsigned top;
	bool any_address;		    /* --any-address: the ends may lie outside the ranges */
	struct privs_user user;		    /* --user: who reads frames once the capture is open */
	const char *local_arg, *remote_arg; /* --local, --remote as given, for the range check */
	int verbose;
};

/*
 * Parses argv into o. Returns 0, 1 if --help or --version was printed, or -EINVAL after
 * logging one line about the bad option (also --local or --remote outside the benchmarking
 * ranges without --any-address).
 */
int wire_options_parse(struct wire_options *o, int argc, char **argv);

#endif
