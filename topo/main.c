/*
 * tunbed-topo: builds and removes the network namespace topology of a gateway test.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jout.h"
#include "log.h"
#include "topo.h"
#include "topo_model.h"
#include "topo_plan.h"
#include "topo_run.h"
#include "topo_show.h"

#ifndef TUNBED_TOPO_DIR
#define TUNBED_TOPO_DIR "topo/topologies"
#endif

enum exit_code {
	EXIT_OK = 0,
	EXIT_FAILED = 1, /* the kernel refused, or not root; what was made is undone */
	EXIT_USAGE = 2,	 /* bad command line or topology file */
};

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: tunbed-topo COMMAND [options] [FILE]\n"
		"\n"
		"Builds the hosts and links of a gateway test as network namespaces.\n"
		"\n"
		"commands:\n"
		"  up FILE           create FILE's namespaces, veth links, addresses, routes and\n"
		"                    rate caps; on any failure undo everything and report\n"
		"  down FILE         remove the namespaces of FILE's hosts\n"
		"  down --prefix P   remove every namespace named P-*, also what a crashed run "
		"left\n"
		"  show FILE         read FILE's hosts back from the kernel: interfaces, "
		"addresses,\n"
		"                    routes, qdiscs, forwarding, processes inside\n"
		"  check FILE        validate FILE (no root needed) and print the plan as the ip "
		"and\n"
		"                    tc commands that would do the same\n"
		"\n"
		"options:\n"
		"  -p, --prefix P    host H lives in namespace P-H; P is 1-15 of [A-Za-z0-9_]\n"
		"                    (default: the file's [topology] prefix, else \"tb\")\n"
		"      --replace     up: remove namespaces of the same names first, not refuse\n"
		"  -j, --json        show, check: print one JSON document\n"
		"  -v, --verbose     more detail on stderr; twice: every step of up\n"
		"  -h, --help        print this help\n"
		"  -V, --version     print the version\n"
		"\n"
		"FILE is a topology file (docs/topology.md) or the name of a built-in one:\n"
		"ras, ras6, direct, ras-pair, ras-hosts, intranet, tunnels (from %s).\n"
		"Exit status: 0 done, 1 failed (anything made is undone), 2 bad usage or file.\n",
		TUNBED_TOPO_DIR);
}

/* A bare name such as "ras" means a built-in topology, unless a file of that name exists. */
static const char *resolve(const char *arg, char *buf, size_t size)
{
	struct stat st;

	if (strchr(arg, '/') || stat(arg, &st) == 0)
		return arg;
	snprintf(buf, size, "%s/%s.topo", TUNBED_TOPO_DIR, arg);
	if (stat(buf, &st) == 0)
		return buf;
	return arg;
}

static int load_or_report(const char *path, struct topo *t)
{
	struct line_error err;
	char line[PATH_MAX + sizeof(err.msg) + 16];
	int rc = topo_load(path, t, &err);

	if (rc == 0)
		return 0;
	log_warnx("%s", line_error_text(path, &err, line, sizeof(line)));
	return rc;
}

static int need_root(const char *cmd)
{
	if (geteuid() == 0)
		return 0;
	log_warnx("%s needs root (namespaces and links need CAP_SYS_ADMIN and CAP_NET_ADMIN): "
		  "run it with sudo",
		  cmd);
	return -EPERM;
}

static void print_removed(const struct topo_removed *r, const char *what)
{
	if (r->count == 0) {
		printf("nothing to remove for %s\n", what);
		return;
	}
	printf("removed %d namespace%s:", r->count, r->count == 1 ? "" : "s");
	for (int i = 0; i < r->count; i++)
		printf(" %s", r->names[i]);
	printf("\n");
}

static int cmd_check(const struct topo *t, const char *prefix, bool json)
{
	static struct topo_plan plan;
	char what[512];
	json_t *doc, *steps;

	if (topo_plan_build(t, &plan)) {
		log_warnx("topology too large to plan: more than %d steps", TOPO_PLAN_MAX);
		return EXIT_USAGE;
	}
	if (!json) {
		printf("# %s, prefix %s: %d hosts, %d links, %d routes, %d steps\n",
		       t->name[0] ? t->name : "topology", prefix, t->nhosts, t->nlinks, t->nroutes,
		       plan.nsteps);
		for (int i = 0; i < plan.nsteps; i++) {
			topo_step_describe(t, prefix, &plan.steps[i], what, sizeof(what));
			printf("%s\n", what);
		}
		return EXIT_OK;
	}
	doc = json_object();
	steps = json_array();
	jout_str(doc, "topology", t->name[0] ? t->name : NULL);
	jout_str(doc, "prefix", prefix);
	jout_int(doc, "hosts", t->nhosts);
	jout_int(doc, "links", t->nlinks);
	jout_int(doc, "routes", t->nroutes);
	for (int i = 0; i < plan.nsteps; i++) {
		json_t *s = json_object();

		topo_step_describe(t, prefix, &plan.steps[i], what, sizeof(what));
		jout_int(s, "step", i + 1);
		jout_int(s, "line", plan.steps[i].line);
		jout_str(s, "command", what);
		jout_append(steps, s);
	}
	jout_set(doc, "steps", steps);
	jout_dump(stdout, doc, JOUT_PRETTY);
	json_decref(doc);
	return EXIT_OK;
}

static int cmd_up(const struct topo *t, const char *path, const char *prefix, bool replace,
		  int fail_at)
{
	static struct topo_plan plan;
	struct topo_up_opts o = {
		.prefix = prefix,
		.replace = replace,
		.fail_at = fail_at,
		.interrupted = &interrupted,
	};
	struct line_error err;
	char line[PATH_MAX + sizeof(err.msg) + 16];
	int rc;

	if (topo_plan_build(t, &plan)) {
		log_warnx("topology too large to plan: more than %d steps", TOPO_PLAN_MAX);
		return EXIT_USAGE;
	}
	rc = topo_up(t, &plan, &o, &err);
	if (rc) {
		log_warnx("%s", line_error_text(path, &err, line, sizeof(line)));
		return EXIT_FAILED;
	}
	printf("%s up: %d namespaces (%s-*), %d links, %d routes\n", t->name[0] ? t->name : path,
	       t->nhosts, prefix, t->nlinks, t->nroutes);
	return EXIT_OK;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "prefix", required_argument, NULL, 'p' },
		{ "replace", no_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		/* Test hook, deliberately not in --help: make step N of up fail. */
		{ "fail-at-step", required_argument, NULL, 'F' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cmd, *prefix = NULL, *path = NULL;
	char builtin[512];
	bool replace = false, json = false;
	int verbose = 0, fail_at = 0, c, rc;
	struct sigaction sa = { .sa_handler = on_signal };
	struct topo_removed removed;
	struct topo *t;

	log_init(argv[0], LOG_LEVEL_WARN);
	if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		usage(stdout);
		return EXIT_OK;
	}
	if (argc >= 2 && (strcmp(argv[1], "-V") == 0 || strcmp(argv[1], "--version") == 0)) {
		printf("tunbed-topo %s\n", TUNBED_VERSION);
		return EXIT_OK;
	}
	if (argc < 2 || argv[1][0] == '-') {
		log_warnx("missing command: up, down, show or check (see --help)");
		return EXIT_USAGE;
	}
	cmd = argv[1];
	if (strcmp(cmd, "up") && strcmp(cmd, "down") && strcmp(cmd, "show") &&
	    strcmp(cmd, "check")) {
		log_warnx("unknown command '%s': expected up, down, show or check", cmd);
		return EXIT_USAGE;
	}
	optind = 2;
	while ((c = getopt_long(argc, argv, "p:jvhV", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (!topo_prefix_valid(optarg)) {
				log_warnx("bad value '%s' for --prefix: use 1 to %d letters, "
					  "digits or '_'",
					  optarg, TOPO_PREFIX_LEN - 1);
				return EXIT_USAGE;
			}
			prefix = optarg;
			break;
		case 'r':
			replace = true;
			break;
		case 'j':
			json = true;
			break;
		case 'v':
			verbose++;
			break;
		case 'h':
			usage(stdout);
			return EXIT_OK;
		case 'V':
			printf("tunbed-topo %s\n", TUNBED_VERSION);
			return EXIT_OK;
		case 'F':
			fail_at = atoi(optarg);
			break;
		default:
			return EXIT_USAGE;
		}
	}
	log_init(argv[0], verbose);
	if (optind < argc)
		path = argv[optind++];
	if (optind < argc) {
		log_warnx("unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	if (!path && !(strcmp(cmd, "down") == 0 && prefix)) {
		log_warnx("%s needs a topology FILE%s", cmd,
			  strcmp(cmd, "down") == 0 ? " or --prefix P" : "");
		return EXIT_USAGE;
	}
	if (strcmp(cmd, "check") && need_root(cmd))
		return EXIT_FAILED;

	if (!path) {
		rc = topo_down_prefix(prefix, &removed);
		if (rc)
			log_warnx("down --prefix %s: %s", prefix, strerror(-rc));
		print_removed(&removed, prefix);
		return rc ? EXIT_FAILED : EXIT_OK;
	}

	t = calloc(1, sizeof(*t));
	if (!t)
		fatal("calloc");
	path = resolve(path, builtin, sizeof(builtin));
	if (load_or_report(path, t)) {
		free(t);
		return EXIT_USAGE;
	}
	if (!prefix)
		prefix = t->prefix;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (strcmp(cmd, "check") == 0) {
		rc = cmd_check(t, prefix, json);
	} else if (strcmp(cmd, "up") == 0) {
		rc = cmd_up(t, path, prefix, replace, fail_at);
	} else if (strcmp(cmd, "down") == 0) {
		rc = topo_down(t, prefix, &removed) ? EXIT_FAILED : EXIT_OK;
		print_removed(&removed, path);
	} else {
		json_t *doc = topo_show(t, prefix);

		rc = EXIT_FAILED;
		if (doc) {
			if (json)
				jout_dump(stdout, doc, JOUT_PRETTY);
			else
				topo_show_text(stdout, doc);
			json_decref(doc);
			rc = EXIT_OK;
		}
	}
	free(t);
	return rc;
}
