/*
 * The tools' command line loop and its messages (see opt.h).
 */
#include "opt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "log.h"

int opt_parse(const struct opt_cli *c, int argc, char **argv)
{
	int id, rc;

	opterr = !c->own_errors;
	while ((id = getopt_long(argc, argv, c->own_errors ? ":vhV" : "vhV", c->opts, NULL)) !=
	       -1) {
		switch (id) {
		case 'v':
			(*c->verbose)++;
			continue;
		case 'h':
			c->usage();
			return 1;
		case 'V':
			printf("%s %s\n", c->prog, c->version);
			return 1;
		case ':':
			log_warnx("%s needs a value", argv[optind - 1]);
			return -EINVAL;
		case '?':
			if (c->own_errors)
				log_warnx("unknown option '%s' (see --help)", argv[optind - 1]);
			return -EINVAL;
		}
		c->given[id - c->base] = true;
		rc = c->apply(c->ctx, id, c->opts[id - c->base].name, optarg ? optarg : "");
		if (rc)
			return rc;
	}
	return 0;
}

int opt_bad(const char *opt, const char *val, const char *expect)
{
	log_warnx("bad value '%s' for --%s: %s", val, opt, expect);
	return -EINVAL;
}

int opt_seconds(const char *opt, const char *val, double min, double max, double *s)
{
	char *end;

	*s = strtod(val, &end);
	if (end == val || *end || !(*s >= min && *s <= max)) {
		char expect[64];

		snprintf(expect, sizeof(expect), "expected seconds from %g to %g", min, max);
		return opt_bad(opt, val, expect);
	}
	return 0;
}

int opt_bench(const char *what, const char *val, const struct netprefix *p, bool any)
{
	if (any || netaddr_prefix_is_bench(p))
		return 0;
	log_warnx("%s %s " OPT_OUTSIDE_BENCH " (--any-address allows it)", what, val);
	return -EINVAL;
}

int opt_bench_addr(const char *what, const char *val, const struct netaddr *a, bool any)
{
	struct netprefix p = { .addr = *a, .len = netaddr_len(a->family) * 8 };

	return opt_bench(what, val, &p, any);
}
