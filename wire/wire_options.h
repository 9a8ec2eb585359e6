/*
 * tunbed-wire's command line (docs/wire.md).
 */
#ifndef TUNBED_WIRE_OPTIONS_H
#define TUNBED_WIRE_OPTIONS_H

#include <stdbool.h>

#include "wire_limits.h"
#include "privs.h"
#include "wire_capture.h"
#include "tunfile.h"
#include "wire_decode.h"
#include "wire_tunnels.h"

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
	const char *tunnels_path;	    /* --tunnels */
	struct tunfile tf;		    /* ... its tunnels, read at start */
	struct wire_tunnels tunnels;	    /* ... as the audit looks them up (expect.tunnels) */
	int verbose;
};

/*
 * Parses argv into o, and reads --tunnels' file. Returns 0, 1 if --help or --version was
 * printed, or -EINVAL after logging one line about the bad option (also --local or --remote
 * outside the benchmarking ranges without --any-address, and a tunnel file's refusal,
 * FILE:LINE: MESSAGE). o is then freed by wire_options_fini.
 */
int wire_options_parse(struct wire_options *o, int argc, char **argv);
void wire_options_fini(struct wire_options *o);

#endif
