/*
 * tunbed-traffic: traffic generator of the testbed (docs/traffic.md).
 */
#include "log.h"
#include "options.h"

int main(int argc, char **argv)
{
	static struct options o;
	int rc;

	log_init(argv[0], LOG_LEVEL_WARN);
	rc = options_parse(&o, argc, argv);
	if (rc)
		return rc > 0 ? 0 : 2;
	log_init(argv[0], o.verbose);
	if (o.mode == MODE_SERVER)
		return server_run(&o.server);
	return client_run(&o.client);
}
