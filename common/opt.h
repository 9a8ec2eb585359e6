/*
 * What the tools' command lines share: the getopt_long loop over long options numbered from a
 * base id, with the options every tool has (-v, -h, -V), the one line a bad value gets, and
 * the refusal of an address outside the benchmarking ranges without --any-address.
 */
#ifndef TUNBED_OPT_H
#define TUNBED_OPT_H

#include <getopt.h>
#include <stdbool.h>

#include "netaddr.h"

/*
 * The options every tool ends its table with: -v counts verbosity, -h and -V print. (Left
 * unformatted: clang-format would fold the last entry into a block.)
 */
/* clang-format off */
#define OPT_COMMON                             \
	{ "verbose", no_argument, NULL, 'v' }, \
	{ "help", no_argument, NULL, 'h' },    \
	{ "version", no_argument, NULL, 'V' }, \
	{ NULL, 0, NULL, 0 }
/* clang-format on */

/* A tool's command line, as opt_parse reads it. */
struct opt_cli {
	const char *prog; /* -V prints "PROG VERSION" */
	const char *version;
	const struct option *opts; /* ends with OPT_COMMON; the others' ids run from base, in
				    * table order */
	int base;
	void (*usage)(void); /* -h */
	/*
	 * Applies option id (its long name, and its value or "" for none). Returns 0, or
	 * -EINVAL after logging one line.
	 */
	int (*apply)(void *ctx, int id, const char *name, const char *value);
	void *ctx;
	bool *given;	 /* given[id - base]: set for each option met, before it is applied */
	int *verbose;	 /* -v counts here */
	bool own_errors; /* an unknown option or a missing value: one line of ours, with the
			  * argument and "see --help"; otherwise getopt_long's own */
};

/*
 * Reads the options of argv from optind on (the caller sets it: 1, or past a subcommand) and
 * stops at the first operand, which optind then indexes. Returns 0, 1 after printing the help
 * or the version, or -EINVAL after one line about a bad option or value. Main thread, before
 * others start: getopt_long keeps its state in globals.
 */
int opt_parse(const struct opt_cli *c, int argc, char **argv);

/* Logs "bad value 'VAL' for --OPT: EXPECT" and returns -EINVAL. */
int opt_bad(const char *opt, const char *val, const char *expect);

/*
 * Seconds as strtod reads them, from min to max, into *s. Otherwise logs "bad value 'VAL'
 * for --OPT: expected seconds from MIN to MAX" and returns -EINVAL.
 */
int opt_seconds(const char *opt, const char *val, double min, double max, double *s);

/* How a refusal of an address outside the benchmarking ranges reads after "WHAT VALUE ". */
#define OPT_OUTSIDE_BENCH "is outside the benchmarking ranges " NETADDR_BENCH_RANGES

/*
 * Whether a tool may use the prefix p, given as val for what ("--remote", "server address"):
 * 0 if p lies inside the benchmarking ranges, or anywhere when any (--any-address) is set.
 * Otherwise logs "WHAT VAL is outside the benchmarking ranges 198.18.0.0/15 and 2001:2::/48
 * (--any-address allows it)" and returns -EINVAL. Call it once every option is read, so that
 * --any-address counts wherever it stands on the command line.
 */
int opt_bench(const char *what, const char *val, const struct netprefix *p, bool any);

/* opt_bench for one address: the prefix of a's full length. */
int opt_bench_addr(const char *what, const char *val, const struct netaddr *a, bool any);

#endif
