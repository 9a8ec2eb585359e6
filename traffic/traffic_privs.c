/*
 * Giving up privileges (see traffic_privs.h), through common/privs.c.
 */
#include "traffic_privs.h"

#include <linux/capability.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "privs.h"

uint64_t traffic_privs_for_congestion(const char *name)
{
	char list[512] = "", *tok, *save = NULL;
	FILE *f;

	if (!name || !name[0])
		return 0;
	f = fopen("/proc/sys/net/ipv4/tcp_allowed_congestion_control", "r");
	if (!f)
		return 0; /* unknown: the socket option will say */
	if (!fgets(list, sizeof(list), f))
		list[0] = 0;
	fclose(f);
	for (tok = strtok_r(list, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save))
		if (strcmp(tok, name) == 0)
			return 0;
	return 1ull << CAP_NET_ADMIN;
}

int traffic_privs_drop(uint64_t keep)
{
	int rc = privs_drop(NULL, keep);

	if (rc == 0)
		log_debug("privileges dropped: %s, NoNewPrivs",
			  keep ? "all but CAP_NET_ADMIN for --congestion" : "no capability");
	return rc;
}
