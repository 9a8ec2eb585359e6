/*
 * tunbed-wire command line (see wire_options.h and docs/wire.md).
 */
#include "wire_options.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inet.h"
#include "log.h"
#include "netns.h"
#include "opt.h"
#include "parse.h"

#ifndef TUNBED_VERSION
#define TUNBED_VERSION "0"
#endif

enum {
	O_NETNS = 256,
	O_IFACE,
	O_TIME,
	O_READ,
	O_WRITE,
	O_LOCAL,
	O_REMOTE,
	O_KEY,
	O_NO_KEY,
	O_SEQ,
	O_NO_SEQ,
	O_CSUM,
	O_NO_CSUM,
	O_MTU,
	O_LINK_MTU,
	O_UDP_PORT,
	O_EXPECT_ECN,
	O_EXPECT_TOS,
	O_EXPECT_TTL,
	O_JSON,
	O_TOP,
	O_CHECK,
	O_BUFFER,
	O_READY_FILE,
	O_USER,
	O_ANY_ADDRESS,
	O_TUNNELS,
};

static const struct option opts[] = {
	{ "netns", required_argument, NULL, O_NETNS },
	{ "iface", required_argument, NULL, O_IFACE },
	{ "time", required_argument, NULL, O_TIME },
	{ "read", required_argument, NULL, O_READ },
	{ "write", required_argument, NULL, O_WRITE },
	{ "local", required_argument, NULL, O_LOCAL },
	{ "remote", required_argument, NULL, O_REMOTE },
	{ "key", required_argument, NULL, O_KEY },
	{ "no-key", no_argument, NULL, O_NO_KEY },
	{ "seq", no_argument, NULL, O_SEQ },
	{ "no-seq", no_argument, NULL, O_NO_SEQ },
	{ "csum", no_argument, NULL, O_CSUM },
	{ "no-csum", no_argument, NULL, O_NO_CSUM },
	{ "mtu", required_argument, NULL, O_MTU },
	{ "link-mtu", required_argument, NULL, O_LINK_MTU },
	{ "udp-port", required_argument, NULL, O_UDP_PORT },
	{ "expect-ecn", required_argument, NULL, O_EXPECT_ECN },
	{ "expect-tos", required_argument, NULL, O_EXPECT_TOS },
	{ "expect-ttl", required_argument, NULL, O_EXPECT_TTL },
	{ "json", no_argument, NULL, O_JSON },
	{ "top", required_argument, NULL, O_TOP },
	{ "check", no_argument, NULL, O_CHECK },
	{ "buffer", required_argument, NULL, O_BUFFER },
	{ "ready-file", required_argument, NULL, O_READY_FILE },
	{ "user", required_argument, NULL, O_USER },
	{ "any-address", no_argument, NULL, O_ANY_ADDRESS },
	{ "tunnels", required_argument, NULL, O_TUNNELS },
	OPT_COMMON,
};

static void usage(void)
{
	printf("usage: tunbed-wire --iface DEV [--netns NS] [--time S] [options]\n"
	       "       tunbed-wire --read FILE [options]\n"
	       "\n"
	       "Audits a tunnel's transit link: decodes every GRE (RFC 2784/2890) and GRE-in-UDP\n"
	       "(RFC 8086) frame over IPv4 or IPv6, checks it against what the tunnel should "
	       "carry,\n"
	       "and reports per direction what crossed: frames, bytes, overhead, sizes, sequence\n"
	       "gaps and reordering, TCP retransmissions, and the top inner flows.\n"
	       "\n"
	       "source:\n"
	       "  --iface DEV          capture live on DEV (libpcap; the kernel filter passes\n"
	       "                       GRE, GRE-in-UDP, fragments, IPv6 with extension headers)\n"
	       "  --netns NS           DEV is in network namespace NS (default: this one)\n"
	       "  --time S             stop after S seconds (default: at SIGINT or SIGTERM)\n"
	       "  --read FILE          read a pcap or pcapng file instead\n"
	       "  --write FILE         also write every frame read to FILE (pcap)\n"
	       "  --buffer B           live: kernel capture buffer (default 64m)\n"
	       "  --ready-file FILE    live: create FILE once the capture runs\n"
	       "  --user USER          once the capture and the files are open, run as USER\n"
	       "                       (default: stay who started it, without capabilities)\n"
	       "expected (each check but ECN's is off unless asked for):\n"
	       "  --local ADDR --remote ADDR  the tunnel's ends; without them the first tunnel\n"
	       "                       frame names them (its source is local); in\n"
	       "                       198.18.0.0/15 or 2001:2::/48 unless --any-address\n"
	       "  --any-address        allow --local and --remote outside those ranges: the\n"
	       "                       tunnel runs on a real network, chosen on purpose\n"
	       "  --tunnels FILE       many tunnels: a gateway's tunnel file (gregw's\n"
	       "                       --tunnels, docs/gregw.md); each frame runs between\n"
	       "                       --local and a tunnel's peer, and carries that tunnel's\n"
	       "                       key, sequence numbers and checksums; instead of\n"
	       "                       --remote, --key, --seq and --csum\n"
	       "  --key N | --no-key   every frame carries key N | carries no key\n"
	       "  --seq | --no-seq     every frame has a sequence number | has none\n"
	       "  --csum | --no-csum   every frame has a GRE checksum | has none\n"
	       "  --mtu N              no inner packet is longer than N bytes\n"
	       "  --link-mtu N         the link's MTU (live: the interface's): a TCP\n"
	       "                       superpacket in one GRE packet longer than that, which\n"
	       "                       the sender left whole for the device to cut, counts as\n"
	       "                       the segments a NIC would send (default for a file: none)\n"
	       "  --udp-port P         GRE-in-UDP destination port (default %d)\n"
	       "  --expect-ecn normal|any  normal (default): the outer ECN field copies the\n"
	       "                       inner one, as RFC 6040's normal mode has it (a CE mark\n"
	       "                       on the way over ECT passes); any: not checked\n"
	       "  --expect-tos inherit|N  the outer DSCP is the inner one (RFC 2983, as ip\n"
	       "                       tunnel's tos inherit sends it) | is N, 0 to 63\n"
	       "  --expect-ttl inherit|N  the outer TTL or hop limit is the inner one | is N,\n"
	       "                       1 to 255\n"
	       "                       always checked: outer fragments, truncation, GRE version\n"
	       "                       and reserved bits, checksums present, inner IP well formed\n"
	       "output:\n"
	       "  --json               one JSON document on stdout (docs/wire.md)\n"
	       "  --top N              inner flows listed by bytes (default %d)\n"
	       "  --check              exit %d if any frame broke an expectation\n"
	       "  -v, --verbose        on stderr: what is captured and how (filter, buffer), why\n"
	       "                       it stopped, what the kernel and the audit counted\n"
	       "  -h, --help           print this help\n"
	       "  -V, --version        print the version\n"
	       "\n"
	       "Exit status: 0 done; 1 the capture failed (bad file, no interface, no "
	       "permission);\n"
	       "2 bad usage; %d with --check when a frame broke an expectation.\n",
	       GRE_UDP_PORT, WIRE_TOP_DEFAULT, WIRE_EXIT_VIOLATIONS, WIRE_EXIT_VIOLATIONS);
}

static int set_want(enum wire_want *w, enum wire_want v, const char *name)
{
	if (*w != WIRE_WANT_ANY && *w != v) {
		log_warnx("--%s contradicts an earlier option", name);
		return -EINVAL;
	}
	*w = v;
	return 0;
}

static int apply(void *ctx, int id, const char *name, const char *v)
{
	struct wire_options *o = ctx;
	struct wire_expect *e = &o->expect;
	uint64_t n;

	switch (id) {
	case O_NETNS:
		if (!netns_name_valid(v))
			return opt_bad(name, v, "expected a namespace name");
		o->cap.netns = v;
		return 0;
	case O_IFACE:
		if (!*v || strlen(v) >= WIRE_IFNAME_LEN || strchr(v, '/'))
			return opt_bad(name, v, "expected an interface name");
		o->cap.iface = v;
		return 0;
	case O_TIME:
		return opt_seconds(name, v, WIRE_TIME_MIN_MS / 1000.0, WIRE_TIME_MAX_S,
				   &o->cap.time_s);
	case O_READ:
		o->cap.read_path = v;
		return 0;
	case O_WRITE:
		o->cap.write_path = v;
		return 0;
	case O_LOCAL:
	case O_REMOTE:
		if (netaddr_parse(v, id == O_LOCAL ? &e->local : &e->remote))
			return opt_bad(name, v, "expected an IPv4 or IPv6 address");
		*(id == O_LOCAL ? &o->local_arg : &o->remote_arg) = v;
		return 0;
	case O_KEY:
		if (parse_u64(v, 0, UINT32_MAX, &n))
			return opt_bad(name, v, "expected 0 to 4294967295");
		e->key_value = (uint32_t)n;
		return set_want(&e->key, WIRE_WANT_YES, name);
	case O_NO_KEY:
		return set_want(&e->key, WIRE_WANT_NO, name);
	case O_SEQ:
	case O_NO_SEQ:
		return set_want(&e->seq, id == O_SEQ ? WIRE_WANT_YES : WIRE_WANT_NO, name);
	case O_CSUM:
	case O_NO_CSUM:
		return set_want(&e->csum, id == O_CSUM ? WIRE_WANT_YES : WIRE_WANT_NO, name);
	case O_MTU:
		if (parse_u64(v, WIRE_MTU_MIN, WIRE_MTU_MAX, &n))
			return opt_bad(name, v, "expected 68 to 65535");
		e->mtu = (unsigned)n;
		return 0;
	case O_LINK_MTU:
		if (parse_u64(v, WIRE_MTU_MIN, WIRE_MTU_MAX, &n))
			return opt_bad(name, v, "expected 68 to 65535");
		e->link_mtu = (unsigned)n;
		return 0;
	case O_UDP_PORT:
		if (parse_u64(v, 1, 65535, &n))
			return opt_bad(name, v, "expected 1 to 65535");
		e->udp_port = (uint16_t)n;
		o->cap.udp_port = (uint16_t)n;
		return 0;
	case O_EXPECT_ECN:
		if (strcmp(v, "normal") && strcmp(v, "any"))
			return opt_bad(name, v, "expected normal or any");
		e->ecn = strcmp(v, "normal") == 0;
		return 0;
	case O_EXPECT_TOS:
		if (strcmp(v, "inherit") == 0) {
			e->dscp = WIRE_FIELD_INHERIT;
			return 0;
		}
		if (parse_u64(v, 0, IP_DSCP_MAX, &n))
			return opt_bad(name, v, "expected inherit or a DSCP from 0 to 63");
		e->dscp = WIRE_FIELD_FIXED;
		e->dscp_value = (uint8_t)n;
		return 0;
	case O_EXPECT_TTL:
		if (strcmp(v, "inherit") == 0) {
			e->ttl = WIRE_FIELD_INHERIT;
			return 0;
		}
		/* No sender puts 0 there; gregw's --ttl 0 means inherit, as ip tunnel's. */
		if (parse_u64(v, 1, 255, &n))
			return opt_bad(name, v, "expected inherit or 1 to 255");
		e->ttl = WIRE_FIELD_FIXED;
		e->ttl_value = (uint8_t)n;
		return 0;
	case O_JSON:
		o->json = true;
		return 0;
	case O_TOP:
		if (parse_u64(v, 0, WIRE_TOP_MAX, &n))
			return opt_bad(name, v, "expected 0 to 10000");
		o->top = (unsigned)n;
		return 0;
	case O_CHECK:
		o->check = true;
		return 0;
	case O_BUFFER:
		if (parse_size(v, &n) || n < WIRE_BUFFER_MIN || n > WIRE_BUFFER_MAX)
			return opt_bad(name, v, "expected 1m to 2047m");
		o->cap.buffer_bytes = n;
		return 0;
	case O_READY_FILE:
		o->cap.ready_file = v;
		return 0;
	case O_USER: {
		int rc = privs_user_lookup(v, &o->user);

		if (rc)
			return opt_bad(name, v, rc == -ENOENT ? "no such user" : strerror(-rc));
		return 0;
	}
	case O_ANY_ADDRESS:
		o->any_address = true;
		return 0;
	case O_TUNNELS:
		o->tunnels_path = v;
		return 0;
	}
	return -EINVAL;
}

/*
 * --tunnels: the file read with gregw's rules (tunfile.h; a refusal is FILE:LINE: MESSAGE),
 * instead of the one tunnel's options, beside --local, whose family the peers share.
 */
static int load_tunnels(struct wire_options *o, const bool *given)
{
	static const int one_tunnel[] = { O_REMOTE, O_KEY,  O_NO_KEY, O_SEQ,
					  O_NO_SEQ, O_CSUM, O_NO_CSUM };
	struct line_error err;
	char line[PATH_MAX + sizeof(err.msg) + 16], a[NETADDR_STRLEN], b[NETADDR_STRLEN];

	for (size_t i = 0; i < sizeof(one_tunnel) / sizeof(one_tunnel[0]); i++) {
		if (given[one_tunnel[i] - O_NETNS]) {
			log_warnx("--%s and --tunnels: each tunnel of %s has its own",
				  opts[one_tunnel[i] - O_NETNS].name, o->tunnels_path);
			return -EINVAL;
		}
	}
	if (!given[O_LOCAL - O_NETNS]) {
		log_warnx("--tunnels needs --local: this end of the tunnels");
		return -EINVAL;
	}
	if (opt_bench_addr("--local", o->local_arg, &o->expect.local, o->any_address))
		return -EINVAL;
	if (tunfile_load(o->tunnels_path, o->any_address, &o->tf, &err)) {
		log_warnx("%s", line_error_text(o->tunnels_path, &err, line, sizeof(line)));
		return -EINVAL;
	}
	for (unsigned i = 0; i < o->tf.n; i++) {
		const struct tunnel_spec *t = &o->tf.specs[i];

		if (t->peer.family != o->expect.local.family) {
			log_warnx("%s:%d: tunnel '%s': peer %s is not of --local %s's family",
				  o->tunnels_path, o->tf.lines[i].peer, t->name,
				  netaddr_format(&t->peer, a), netaddr_format(&o->expect.local, b));
			return -EINVAL;
		}
	}
	if (wire_tunnels_init(&o->tunnels, o->tf.specs, o->tf.n)) {
		log_warnx("out of memory");
		return -EINVAL;
	}
	o->expect.tunnels = &o->tunnels;
	o->expect.has_peers = true;
	return 0;
}

/* Options that do not make sense together, and the tunnel's ends against the ranges. */
static int check(struct wire_options *o, const bool *given)
{
	const struct wire_capture_cfg *c = &o->cap;

	if (!c->iface == !c->read_path) {
		log_warnx(c->iface ? "--iface and --read exclude each other"
				   : "nothing to audit: give --iface DEV or --read FILE");
		return -EINVAL;
	}
	if (c->read_path) {
		static const int live_only[] = { O_NETNS, O_TIME, O_BUFFER, O_READY_FILE };

		for (size_t i = 0; i < sizeof(live_only) / sizeof(live_only[0]); i++) {
			if (given[live_only[i] - O_NETNS]) {
				log_warnx("--%s is for a live capture (--iface)",
					  opts[live_only[i] - O_NETNS].name);
				return -EINVAL;
			}
		}
	}
	if (o->tunnels_path)
		return load_tunnels(o, given);
	if (given[O_LOCAL - O_NETNS] != given[O_REMOTE - O_NETNS]) {
		log_warnx("--local and --remote go together");
		return -EINVAL;
	}
	if (given[O_LOCAL - O_NETNS]) {
		if (o->expect.local.family != o->expect.remote.family) {
			log_warnx("--local and --remote must be of one family");
			return -EINVAL;
		}
		if (netaddr_equal(&o->expect.local, &o->expect.remote)) {
			log_warnx("--local and --remote must differ");
			return -EINVAL;
		}
		/*
		 * tunbed-wire only captures and sends nothing, but the rule is the same for every
		 * tool the hosts mode runs: ends outside the benchmarking ranges mean a real
		 * network, and only --any-address says that one was chosen on purpose.
		 */
		if (opt_bench_addr("--local", o->local_arg, &o->expect.local, o->any_address) ||
		    opt_bench_addr("--remote", o->remote_arg, &o->expect.remote, o->any_address))
			return -EINVAL;
		o->expect.has_peers = true;
	}
	return 0;
}

int wire_options_parse(struct wire_options *o, int argc, char **argv)
{
	bool given[O_TUNNELS - O_NETNS + 1] = { false };
	struct opt_cli cli = { .prog = "tunbed-wire",
			       .version = TUNBED_VERSION,
			       .opts = opts,
			       .base = O_NETNS,
			       .usage = usage,
			       .apply = apply,
			       .ctx = o,
			       .given = given,
			       .verbose = &o->verbose,
			       .own_errors = true };
	int rc;

	memset(o, 0, sizeof(*o));
	wire_expect_init(&o->expect);
	o->cap.udp_port = GRE_UDP_PORT;
	o->cap.buffer_bytes = WIRE_BUFFER_DEFAULT;
	o->cap.stop_fd = -1;
	o->top = WIRE_TOP_DEFAULT;
	optind = 1;
	rc = opt_parse(&cli, argc, argv);
	if (rc)
		return rc;
	if (optind < argc) {
		log_warnx("unexpected argument '%s' (see --help)", argv[optind]);
		return -EINVAL;
	}
	return check(o, given);
}

void wire_options_fini(struct wire_options *o)
{
	wire_tunnels_fini(&o->tunnels);
	tunfile_free(&o->tf);
	o->expect.tunnels = NULL;
}
