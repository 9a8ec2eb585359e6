/*
 * gregw: the userspace GRE gateway of tunbed (docs/gregw.md).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "ctl.h"
#include "gregw.h"
#include "log.h"

/* gregw ctl PATH [COMMAND [ARGS...]]: the words after PATH, joined by blanks, are the line
 * sent (default stats); the server judges it (a tunnel's keys may hold any of them). */
static int ctl_main(int argc, char **argv)
{
	static const char *const known[] = {
		"stats", "flows", "tunnels", "add", "replace", "remove"
	};
	char cmd[CTL_CMD_MAX + 1] = "stats";
	size_t len = 0;
	bool ok = false;
	int rc;

	if (argc < 3) {
		log_warnx("usage: gregw ctl PATH [stats|flows|tunnels|add|replace|remove ...]");
		return CONFIG_EXIT_USAGE;
	}
	for (int i = 3; i < argc; i++) {
		int n = snprintf(cmd + len, sizeof(cmd) - len, "%s%s", i > 3 ? " " : "", argv[i]);

		if (n < 0 || (size_t)n >= sizeof(cmd) - len) {
			log_warnx("control command too long: at most %d bytes", CTL_CMD_MAX);
			return CONFIG_EXIT_USAGE;
		}
		len += (size_t)n;
	}
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		size_t k = strlen(known[i]);

		ok = ok || (strncmp(cmd, known[i], k) == 0 && (cmd[k] == ' ' || cmd[k] == '\0'));
	}
	if (!ok) {
		log_warnx("unknown control command '%s': expected stats, flows, tunnels, add, "
			  "replace or remove",
			  cmd);
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
	if (rc) {
		config_fini(&cfg);
		return rc > 0 ? 0 : CONFIG_EXIT_USAGE;
	}
	log_init(argv[0], cfg.verbose);
	rc = gregw_run(&cfg);
	config_fini(&cfg);
	return rc;
}
