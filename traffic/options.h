/*
 * tunbed-traffic's command line: `server` and `client HOST` and their options, checked
 * before anything starts. Pure apart from printing the one line a bad value gets.
 */
#ifndef TUNBED_TR_OPTIONS_H
#define TUNBED_TR_OPTIONS_H

#include "client.h"
#include "server.h"

enum { TRAFFIC_DEFAULT_PORT = 9400 };

enum options_mode {
	MODE_SERVER,
	MODE_CLIENT,
};

struct options {
	enum options_mode mode;
	struct server_cfg server;
	struct client_cfg client;
	bool any_address;     /* --any-address: HOST or --bind may lie outside the ranges */
	const char *bind_arg; /* --bind as given, for the range check after every option */
	int verbose;
};

/*
 * Parses argv into *o. Returns 0 to run, 1 after printing help or the version, or -EINVAL
 * after printing one line naming the bad option and value.
 */
int options_parse(struct options *o, int argc, char **argv);

#endif
