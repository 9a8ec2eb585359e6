/*
 * gregw: the userspace GRE gateway of tunbed (docs/gregw.md).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "ctl.h"
#include "gregw.h"
#include "log.h"

static int ctl_main(int argc, char **argv)
{
	const char *cmd = argc >= 4 ? argv[3] : "stats";
	int rc;

	if (argc < 3 || argc > 4) {
		log_warnx("usage: gregw ctl PATH [stats|flows]");
		return CONFIG_EXIT_USAGE;
	}
	if (strcmp(cmd, "stats") != 0 && strcmp(cmd, "flows") != 0) {
		log_warnx("unknown control command '%s': expected stats or flows", cmd);
		return CONFIG_EXIT_USAGE;
	}
	rc = ctl_request(argv[2], cmd, stdout);
	if (rc) {
		log_warnx("%s: %s", argv[2], strerror(-rc));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct config cfg;
	int rc;

	log_init(argv[0], LOG_LEVEL_WARN);
	if (argc >= 2 && strcmp(argv[1], "ctl") == 0)
		return ctl_main(argc, argv);
	config_defaults(&cfg);
	rc = config_parse(&cfg, argc, argv);
	if (rc)
		return rc > 0 ? 0 : CONFIG_EXIT_USAGE;
	log_init(argv[0], cfg.verbose);
	return gregw_run(&cfg);
}
