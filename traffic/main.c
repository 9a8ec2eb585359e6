/*
 * tunbed-traffic: traffic generator of the testbed (docs/traffic.md).
 */
#include <sys/resource.h>

#include "log.h"
#include "options.h"

/* Thousands of sessions need thousands of descriptors: take what the hard limit allows. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int main(int argc, char **argv)
{
	static struct options o;
	int rc;

	log_init(argv[0], LOG_LEVEL_WARN);
	rc = options_parse(&o, argc, argv);
	if (rc)
		return rc > 0 ? 0 : 2;
	log_init(argv[0], o.verbose);
	raise_fd_limit();
	if (o.mode == MODE_SERVER)
		return server_run(&o.server);
	return client_run(&o.client);
}
