/*
 * tunbed-traffic: traffic generator of the testbed (docs/traffic.md).
 */
#include <sys/resource.h>

#include "log.h"
#include "options.h"
#include "traffic_privs.h"

/*
 * Thousands of sessions need thousands of descriptors: take what the hard limit allows (a soft
 * limit up to the hard one needs no privilege; this comes first all the same, before any is
 * given up).
 */
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
		return server_run(&o.server); /* it binds its port, then drops */
	/* The client needs no privilege, but for a congestion control the kernel restricts. */
	if (traffic_privs_drop(traffic_privs_for_congestion(o.client.congestion)))
		return 1;
	return client_run(&o.client);
}
