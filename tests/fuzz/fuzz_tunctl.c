/*
 * libFuzzer harness for the control socket's tunnel commands (gateway/tunctl.h): any line is
 * either not a tunnel command, or answered with one JSON document, an error or what was done;
 * the list and the published table then hold the same tunnels in the same order of names,
 * and a refusal changed nothing. After a change the tunnels of the start are published again.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "tunctl.h"
#include "tunfile.h"
#include "tunnels_pub.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char start[] = "[tunnel t0]\npeer = 198.18.0.2\nkey = 1\nprefixes = 198.18.128.0/32\n"
			    "[tunnel t1]\npeer = 198.18.0.2\nkey = 2\nseq = yes\n"
			    "prefixes = 198.18.128.1/32, 2001:2:0:8001::/64\n"
			    "[tunnel t2]\npeer = 198.18.0.3\nprefixes = 198.18.129.0/24\n";

static struct config cfg;
static struct tunnels_pub pub;
static struct tunctl tc;

static void publish_start(void)
{
	tunctl_fini(&tc);
	if (tunctl_init(&tc, &cfg) || tunctl_publish(&tc, &pub))
		abort();
}

static void setup(void)
{
	struct line_error err;

	config_defaults(&cfg);
	strcpy(cfg.tunnels, "fuzz.tunnels");
	if (tunfile_parse(start, sizeof(start) - 1, false, &cfg.tf, &err) ||
	    tunnels_pub_init(&pub, 1))
		abort();
	cfg.remote = cfg.tf.specs[0].peer;
	cfg.has_remote = true;
	publish_start();
}

/* The list and the table in force: the same names, in the same (strictly rising) order. */
static void check_same(void)
{
	const struct tunnels *t = tunnels_pub_current(&pub);

	if (tunnels_count(t) != tc.n)
		abort();
	for (unsigned i = 0; i < tc.n; i++) {
		if (strcmp(tunnels_at(t, i)->name, tc.specs[i].name) != 0 ||
		    (i && strcmp(tc.specs[i - 1].name, tc.specs[i].name) >= 0))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	uint64_t gen;
	bool handled, later;
	json_t *doc;

	if (!ready) {
		setup();
		ready = 1;
	}
	gen = tunnels_gen(tunnels_pub_current(&pub));
	doc = tunctl_command(&tc, (const char *)data, size, 1, 0, &handled, &later);
	if (later)
		abort(); /* no worker holds a table: a change never waits */
	if (!handled) {
		if (doc)
			abort();
		return 0;
	}
	if (!doc)
		abort(); /* every line that names the tunnels gets its answer */
	check_same();
	if (json_object_get(doc, "error")) {
		if (!json_is_string(json_object_get(doc, "error")) ||
		    tunnels_gen(tunnels_pub_current(&pub)) != gen)
			abort(); /* a refusal changes nothing */
	} else if (json_object_get(doc, "changed")) {
		if (tunnels_gen(tunnels_pub_current(&pub)) != gen + 1)
			abort();
		publish_start();
		check_same();
	} else if (!json_is_array(json_object_get(doc, "list"))) {
		abort();
	}
	json_decref(doc);
	tunnels_pub_reclaim(&pub);
	return 0;
}
