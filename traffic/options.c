/*
 * tunbed-traffic command line (see options.h and docs/traffic.md).
 */
#include "options.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "icmp.h"
#include "inet.h"
#include "traffic_limits.h"
#include "log.h"
#include "opt.h"
#include "pairs.h"
#include "parse.h"
#include "thread.h"

enum {
	O_PORT = 256,
	O_BIND,
	O_THREADS,
	O_CPUS,
	O_DSCP,
	O_SESSIONS,
	O_TIME,
	O_BYTES,
	O_ITERATIONS,
	O_WARMUP,
	O_PATTERN,
	O_RATE,
	O_BUFFER,
	O_SNDBUF,
	O_RCVBUF,
	O_CONGESTION,
	O_ECN,
	O_VERIFY,
	O_SHUTDOWN,
	O_CHURN,
	O_UDP,
	O_SIZE,
	O_RR,
	O_RR_RATE,
	O_RR_SIZE,
	O_ICMP,
	O_ICMP_COUNT,
	O_ICMP_INTERVAL,
	O_ICMP_SIZE,
	O_INTERVAL,
	O_JSON,
	O_JSON_STREAM,
	O_CORRUPT,
	O_ANY_ADDRESS,
	O_PPS,
	O_SAMPLE,
	O_PAIRS, /* the last: check() and options_parse() size their tables by it */
};

static const struct option opts[] = {
	{ "port", required_argument, NULL, O_PORT },
	{ "bind", required_argument, NULL, O_BIND },
	{ "threads", required_argument, NULL, O_THREADS },
	{ "cpus", required_argument, NULL, O_CPUS },
	{ "dscp", required_argument, NULL, O_DSCP },
	{ "sessions", required_argument, NULL, O_SESSIONS },
	{ "time", required_argument, NULL, O_TIME },
	{ "bytes", required_argument, NULL, O_BYTES },
	{ "iterations", required_argument, NULL, O_ITERATIONS },
	{ "warmup", required_argument, NULL, O_WARMUP },
	{ "pattern", required_argument, NULL, O_PATTERN },
	{ "rate", required_argument, NULL, O_RATE },
	{ "buffer", required_argument, NULL, O_BUFFER },
	{ "sndbuf", required_argument, NULL, O_SNDBUF },
	{ "rcvbuf", required_argument, NULL, O_RCVBUF },
	{ "congestion", required_argument, NULL, O_CONGESTION },
	{ "ecn", required_argument, NULL, O_ECN },
	{ "verify", no_argument, NULL, O_VERIFY },
	{ "shutdown", required_argument, NULL, O_SHUTDOWN },
	{ "churn", no_argument, NULL, O_CHURN },
	{ "udp", no_argument, NULL, O_UDP },
	{ "size", required_argument, NULL, O_SIZE },
	{ "rr", no_argument, NULL, O_RR },
	{ "rr-rate", required_argument, NULL, O_RR_RATE },
	{ "rr-size", required_argument, NULL, O_RR_SIZE },
	{ "icmp", no_argument, NULL, O_ICMP },
	{ "icmp-count", required_argument, NULL, O_ICMP_COUNT },
	{ "icmp-interval", required_argument, NULL, O_ICMP_INTERVAL },
	{ "icmp-size", required_argument, NULL, O_ICMP_SIZE },
	{ "interval", required_argument, NULL, O_INTERVAL },
	{ "json", no_argument, NULL, O_JSON },
	{ "json-stream", no_argument, NULL, O_JSON_STREAM },
	/* Test hook, deliberately not in --help: the server corrupts one byte it sends. */
	{ "corrupt-offset", required_argument, NULL, O_CORRUPT },
	{ "any-address", no_argument, NULL, O_ANY_ADDRESS },
	{ "pps", required_argument, NULL, O_PPS },
	{ "sample", required_argument, NULL, O_SAMPLE },
	{ "pairs", required_argument, NULL, O_PAIRS },
	OPT_COMMON,
};

static void usage(void)
{
	printf("usage: tunbed-traffic server [options]\n"
	       "       tunbed-traffic client HOST [options]\n"
	       "\n"
	       "Traffic for gateway tests: many TCP sessions (push, pull, duplex; verified or\n"
	       "not), paced UDP with loss and jitter, and request/response latency probes, also\n"
	       "under load. HOST is an address in 198.18.0.0/15 or 2001:2::/48 (anywhere with\n"
	       "--any-address).\n"
	       "\n"
	       "both:\n"
	       "  --port P             TCP and UDP port (default %d)\n"
	       "  --threads T          worker threads (default: one per CPU)\n"
	       "  --cpus LIST          pin the threads to these CPUs, in order\n"
	       "  --dscp N             the DSCP (0 to 63) of the sessions' packets: the\n"
	       "                       client's TCP and UDP sessions, the server's TCP\n"
	       "                       connections and UDP replies (default 0)\n"
	       "  --any-address        allow HOST and --bind outside 198.18.0.0/15 and\n"
	       "                       2001:2::/48: a real network, chosen on purpose (the\n"
	       "                       client's JSON config says any_address)\n"
	       "server:\n"
	       "  --bind ADDR          listen on ADDR only (default: every address)\n"
	       "client, sessions:\n"
	       "  --sessions N         concurrent sessions, 1 to %d (default 1)\n"
	       "  --time S             seconds each session runs after the warm-up (default 10)\n"
	       "  --bytes B            bytes each session moves per direction, instead of --time\n"
	       "                       (suffixes k, m, g: 1024-based)\n"
	       "  --warmup S           seconds before --time, excluded from the results (default "
	       "0)\n"
	       "  --iterations K       K rounds of the sessions, one after the other (default 1)\n"
	       "  --pattern P          push (client sends), pull (server sends) or duplex\n"
	       "  --rate R             pace each session at R bit/s (1gbit, 100m); default: "
	       "unpaced\n"
	       "  --buffer B           bytes per write and read (default 128k)\n"
	       "  --sndbuf B, --rcvbuf B  socket buffer sizes (default: the kernel's autotuning)\n"
	       "  --congestion ALG     TCP congestion control (cubic, reno, bbr if loaded)\n"
	       "  --ecn on|off|CODE    TCP: on, every session must negotiate ECN, which the\n"
	       "                       namespace's net.ipv4.tcp_ecn asks for (1); off (default),\n"
	       "                       as the namespace has it. UDP: the ECN field of every\n"
	       "                       datagram, CODE not-ect (off, default), ect0 (on), ect1\n"
	       "                       or ce\n"
	       "  --verify             check every received byte against the session's pattern\n"
	       "  --shutdown graceful|rst  close with FIN (default) or abort with RST\n"
	       "  --churn              reconnect each session as soon as it ends, until --time;\n"
	       "                       use with --bytes; reports connections per second\n"
	       "  --pairs FILE         spread the sessions over address pairs: FILE has one\n"
	       "                       'LOCAL REMOTE' a line (blank lines and # comments\n"
	       "                       allowed, at most %d); session i binds to LOCAL and\n"
	       "                       connects to REMOTE of pair i mod n, the control\n"
	       "                       connection stays to HOST; the JSON names each session's\n"
	       "                       pair\n"
	       "client, UDP:\n"
	       "  --udp                UDP sessions at --rate each (or --pps in all); the server\n"
	       "                       reports loss, duplicates, reordering and RFC 3550 jitter\n"
	       "  --size S             datagram size in bytes, 18 to 65507 (default 1400)\n"
	       "  --pps N              datagrams a second over all sessions (k, m: 1000-based),\n"
	       "                       instead of --rate; the sessions take turns, so N may be\n"
	       "                       below --sessions; the JSON says whether it was offered\n"
	       "  --sample N           every N-th datagram of a session asks the server for a\n"
	       "                       reply: its round trip is a latency sample\n"
	       "client, latency:\n"
	       "  --rr                 request/response probes on their own connection, with\n"
	       "                       --sessions: latency under load; alone: idle latency\n"
	       "  --rr-rate N          probes per second (default 100; 0: back to back)\n"
	       "  --rr-size S          probe size in bytes, 16 to 65536 (default 64)\n"
	       "  --icmp               ICMP echo probes (ping), answered by HOST's kernel: alone,\n"
	       "                       --icmp-count of them; with --sessions, beside the load\n"
	       "                       from the end of the warm-up until it ends (unprivileged\n"
	       "                       ping sockets: net.ipv4.ping_group_range)\n"
	       "  --icmp-count N       probes, 1 to %d (default 100)\n"
	       "  --icmp-interval S    seconds between probes, 0.001 to 60 (default 0.2)\n"
	       "  --icmp-size S        payload bytes, as ping -s: 16 to %d (default 56)\n"
	       "client, output:\n"
	       "  --interval S         a report every S seconds (0.1 to 3600)\n"
	       "  --json               one JSON document at the end (docs/traffic.md)\n"
	       "  --json-stream        a JSON line per interval and one at the end\n"
	       "other:\n"
	       "  -v, --verbose        more on stderr\n"
	       "  -h, --help           print this help\n"
	       "  -V, --version        print the version\n"
	       "\n"
	       "Exit status: 0 done; 1 a session failed, data did not verify, or the test was\n"
	       "interrupted (partial results are still printed); 2 bad usage.\n",
	       TRAFFIC_DEFAULT_PORT, PROTO_MAX_SESSIONS, TRAFFIC_PAIRS_MAX, TRAFFIC_ICMP_COUNT_MAX,
	       ICMP_PAYLOAD_MAX);
}

static int seconds(const char *opt, const char *v, double min, double max, uint64_t *ms)
{
	double s;
	int rc = opt_seconds(opt, v, min, max, &s);

	if (rc)
		return rc;
	*ms = (uint64_t)(s * 1000 + 0.5);
	return 0;
}

static int apply(void *ctx, int id, const char *name, const char *v)
{
	struct options *o = ctx;
	struct client_cfg *c = &o->client;
	struct server_cfg *s = &o->server;
	uint64_t n;

	switch (id) {
	case O_PORT:
		if (parse_u64(v, 1, 65535, &n))
			return opt_bad(name, v, "expected 1 to 65535");
		c->port = s->port = (uint16_t)n;
		return 0;
	case O_BIND:
		if (netaddr_parse(v, &s->bind))
			return opt_bad(name, v, "expected an address");
		o->bind_arg = v;
		s->has_bind = true;
		return 0;
	case O_THREADS:
		if (parse_u64(v, 1, TRAFFIC_MAX_THREADS, &n))
			return opt_bad(name, v, "expected 1 to 64");
		c->threads = s->threads = (unsigned)n;
		return 0;
	case O_CPUS:
		if (parse_cpulist(v, &c->cpus) <= 0)
			return opt_bad(name, v, "expected a CPU list such as 0-3,6");
		/* The threads are pinned to them: a CPU there is not would fail only then. */
		if (thread_cpus_check("--cpus", v, &c->cpus))
			return -EINVAL;
		s->cpus = c->cpus;
		c->has_cpus = s->has_cpus = true;
		return 0;
	case O_DSCP:
		if (parse_u64(v, 0, IP_DSCP_MAX, &n))
			return opt_bad(name, v, "expected a DSCP from 0 to 63");
		c->dscp = s->dscp = (uint8_t)n;
		return 0;
	case O_ECN: {
		int cp = ip_ecn_parse(v);

		if (strcmp(v, "off") == 0) {
			c->ecn = CLIENT_ECN_OFF;
			c->ecn_codepoint = IP_ECN_NOT_ECT;
		} else if (strcmp(v, "on") == 0) {
			c->ecn = CLIENT_ECN_ON;
			c->ecn_codepoint = IP_ECN_ECT0;
		} else if (cp >= 0) {
			c->ecn = CLIENT_ECN_CODEPOINT;
			c->ecn_codepoint = (uint8_t)cp;
		} else {
			return opt_bad(name, v, "expected on, off, not-ect, ect0, ect1 or ce");
		}
		return 0;
	}
	case O_SESSIONS:
		if (parse_u64(v, 1, PROTO_MAX_SESSIONS, &n))
			return opt_bad(name, v, "expected 1 to 10000");
		c->sessions = (unsigned)n;
		return 0;
	case O_TIME:
		return seconds(name, v, TRAFFIC_TIME_MIN_MS / 1000.0, TRAFFIC_TIME_MAX_S,
			       &c->time_ms);
	case O_WARMUP:
		return seconds(name, v, 0, TRAFFIC_WARMUP_MAX_S, &c->warmup_ms);
	case O_INTERVAL:
		return seconds(name, v, TRAFFIC_TIME_MIN_MS / 1000.0, TRAFFIC_INTERVAL_MAX_S,
			       &c->interval_ms);
	case O_BYTES:
		if (parse_size(v, &c->bytes) || c->bytes == 0)
			return opt_bad(name, v, "expected a size such as 100m");
		return 0;
	case O_ITERATIONS:
		if (parse_u64(v, 1, TRAFFIC_ITERATIONS_MAX, &n))
			return opt_bad(name, v, "expected 1 to 1000000");
		c->iterations = (unsigned)n;
		return 0;
	case O_PATTERN:
		if (strcmp(v, "push") == 0)
			c->pattern = PROTO_PUSH;
		else if (strcmp(v, "pull") == 0)
			c->pattern = PROTO_PULL;
		else if (strcmp(v, "duplex") == 0)
			c->pattern = PROTO_DUPLEX;
		else
			return opt_bad(name, v, "expected push, pull or duplex");
		return 0;
	case O_RATE:
		if (parse_rate(v, &c->rate_bps))
			return opt_bad(name, v, "expected a bit rate such as 100mbit or 1g");
		return 0;
	case O_BUFFER:
		if (parse_size(v, &n) || n < 1 || n > TRAFFIC_BUFFER_MAX)
			return opt_bad(name, v, "expected 1 to 16m");
		c->buffer = (uint32_t)n;
		return 0;
	case O_SNDBUF:
	case O_RCVBUF:
		if (parse_size(v, &n) || n < TRAFFIC_SOCKBUF_MIN || n > TRAFFIC_SOCKBUF_MAX)
			return opt_bad(name, v, "expected 4k to 1g");
		*(id == O_SNDBUF ? &c->sndbuf : &c->rcvbuf) = (int)n;
		return 0;
	case O_CONGESTION:
		if (!*v || strlen(v) >= sizeof(c->congestion))
			return opt_bad(name, v, "expected an algorithm name such as cubic");
		snprintf(c->congestion, sizeof(c->congestion), "%s", v);
		return 0;
	case O_VERIFY:
		c->verify = true;
		return 0;
	case O_SHUTDOWN:
		if (strcmp(v, "graceful") == 0)
			c->rst = false;
		else if (strcmp(v, "rst") == 0)
			c->rst = true;
		else
			return opt_bad(name, v, "expected graceful or rst");
		return 0;
	case O_CHURN:
		c->churn = true;
		return 0;
	case O_UDP:
		c->udp = true;
		return 0;
	case O_SIZE:
		if (parse_u64(v, PROTO_UDP_SHORT_HLEN, TRAFFIC_UDP_SIZE_MAX, &n))
			return opt_bad(name, v, "expected 18 to 65507");
		c->udp_size = (uint32_t)n;
		return 0;
	case O_RR:
		c->rr = true;
		return 0;
	case O_RR_RATE:
		if (parse_u64(v, 0, TRAFFIC_RR_RATE_MAX, &n))
			return opt_bad(name, v, "expected 0 to 1000000");
		c->rr_rate = (uint32_t)n;
		return 0;
	case O_RR_SIZE:
		if (parse_u64(v, PROTO_RR_MIN, PROTO_RR_MAX, &n))
			return opt_bad(name, v, "expected 16 to 65536");
		c->rr_size = (uint32_t)n;
		return 0;
	case O_ICMP:
		c->icmp = true;
		return 0;
	case O_ICMP_COUNT:
		if (parse_u64(v, 1, TRAFFIC_ICMP_COUNT_MAX, &n))
			return opt_bad(name, v, "expected 1 to 100000");
		c->icmp_count = (uint32_t)n;
		return 0;
	case O_ICMP_INTERVAL:
		return seconds(name, v, 0.001, TRAFFIC_ICMP_INTERVAL_MAX_S, &c->icmp_interval_ms);
	case O_ICMP_SIZE:
		if (parse_u64(v, ICMP_PROBE_HLEN, ICMP_PAYLOAD_MAX, &n))
			return opt_bad(name, v, "expected 16 to 65499");
		c->icmp_size = (uint32_t)n;
		return 0;
	case O_JSON:
		c->output = OUT_JSON;
		return 0;
	case O_JSON_STREAM:
		c->output = OUT_JSON_STREAM;
		return 0;
	case O_CORRUPT:
		if (parse_u64(v, 0, UINT64_MAX - 1, &s->corrupt_at))
			return opt_bad(name, v, "expected a byte offset");
		return 0;
	case O_ANY_ADDRESS:
		o->any_address = c->any_address = true; /* the client's for its JSON */
		return 0;
	case O_PPS:
		if (parse_rate(v, &n) || n > TRAFFIC_PPS_MAX)
			return opt_bad(name, v, "expected 1 to 100m datagrams a second");
		c->pps = n;
		return 0;
	case O_SAMPLE:
		if (parse_u64(v, 1, TRAFFIC_SAMPLE_MAX, &n))
			return opt_bad(name, v, "expected 1 to 1000000000");
		c->sample = (uint32_t)n;
		return 0;
	case O_PAIRS:
		c->pairs_path = v; /* read in check(), where --any-address is known */
		return 0;
	}
	return -EINVAL;
}

static void defaults(struct options *o)
{
	memset(o, 0, sizeof(*o));
	o->server.port = o->client.port = TRAFFIC_DEFAULT_PORT;
	o->server.corrupt_at = UINT64_MAX;
	o->client.time_ms = 10000;
	o->client.iterations = 1;
	o->client.pattern = PROTO_PUSH;
	o->client.buffer = 128 << 10;
	o->client.udp_size = 1400;
	o->client.rr_rate = 100;
	o->client.rr_size = 64;
	o->client.icmp_count = 100;
	o->client.icmp_interval_ms = 200;
	o->client.icmp_size = ICMP_PAYLOAD_DEFAULT;
}

/*
 * Options that do not make sense together, or for the chosen role. The addresses are checked
 * here, after every option, so that --any-address counts wherever it stands.
 */
static int check(struct options *o, const bool *given)
{
	struct client_cfg *c = &o->client;

	if (o->mode == MODE_SERVER) {
		for (int id = O_SESSIONS; id <= O_PAIRS; id++) {
			if (given[id - O_PORT] && id != O_CORRUPT && id != O_ANY_ADDRESS) {
				log_warnx("--%s is a client option", opts[id - O_PORT].name);
				return -EINVAL;
			}
		}
		if (o->server.has_bind)
			return opt_bench_addr("--bind", o->bind_arg, &o->server.bind,
					      o->any_address);
		return 0;
	}
	if (given[O_BIND - O_PORT] || given[O_CORRUPT - O_PORT]) {
		log_warnx("--%s is a server option",
			  given[O_BIND - O_PORT] ? "bind" : "corrupt-offset");
		return -EINVAL;
	}
	if (given[O_TIME - O_PORT] && given[O_BYTES - O_PORT] && !c->churn) {
		log_warnx("--time and --bytes exclude each other (with --churn, --time bounds the "
			  "test and --bytes each connection)");
		return -EINVAL;
	}
	if (c->bytes && !c->churn)
		c->time_ms = 0;
	if (c->bytes && c->warmup_ms) {
		log_warnx("--warmup needs --time: a test by --bytes has no warm-up to exclude");
		return -EINVAL;
	}
	if (c->churn && !c->bytes) {
		log_warnx("--churn needs --bytes: what each connection moves before it closes");
		return -EINVAL;
	}
	if ((c->pps || c->sample) && !c->udp) {
		log_warnx("--%s is for --udp", c->pps ? "pps" : "sample");
		return -EINVAL;
	}
	if (c->pps && c->rate_bps) {
		log_warnx("--pps and --rate exclude each other: one rate, in datagrams or in bits");
		return -EINVAL;
	}
	if (c->udp && !c->rate_bps && !c->pps) {
		log_warnx("--udp needs --rate or --pps: UDP has no congestion control to pace it");
		return -EINVAL;
	}
	if (!c->udp && c->ecn == CLIENT_ECN_CODEPOINT) {
		log_warnx("--ecn %s is for --udp: TCP's ECN codepoints are the kernel's (--ecn on "
			  "or off)",
			  ip_ecn_name(c->ecn_codepoint));
		return -EINVAL;
	}
	if (c->udp && (c->pattern != PROTO_PUSH || c->verify || c->churn || c->rst)) {
		log_warnx("--udp sends from client to server only: no --pattern, --verify, --churn "
			  "or --shutdown");
		return -EINVAL;
	}
	for (int id = O_ICMP_COUNT; id <= O_ICMP_SIZE; id++) {
		if (given[id - O_PORT] && !c->icmp) {
			log_warnx("--%s needs --icmp", opts[id - O_PORT].name);
			return -EINVAL;
		}
	}
	if (!given[O_SESSIONS - O_PORT] && (c->rr || c->icmp))
		c->sessions = 0;
	else if (!c->sessions)
		c->sessions = 1;
	if (c->icmp && !c->rr && c->bytes && !c->sessions) {
		log_warnx("--icmp alone sends --icmp-count probes: no --bytes");
		return -EINVAL;
	}
	if (c->rr && c->bytes && !c->sessions) {
		log_warnx("--rr alone runs for --time, not --bytes");
		return -EINVAL;
	}
	if (c->pairs_path && (c->udp || !c->sessions)) {
		log_warnx("--pairs spreads TCP sessions: not with --udp, nor without sessions");
		return -EINVAL;
	}
	if (c->pairs_path && pairs_load(c->pairs_path, o->any_address, &c->pairs, &c->npairs))
		return -EINVAL;
	return 0;
}

int options_parse(struct options *o, int argc, char **argv)
{
	bool given[O_PAIRS - O_PORT + 1] = { false };
	struct opt_cli cli = { .prog = "tunbed-traffic",
			       .version = TUNBED_VERSION,
			       .opts = opts,
			       .base = O_PORT,
			       .usage = usage,
			       .apply = apply,
			       .ctx = o,
			       .given = given,
			       .verbose = &o->verbose };
	const char *host;
	int rc;

	defaults(o);
	if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		usage();
		return 1;
	}
	if (argc >= 2 && (strcmp(argv[1], "-V") == 0 || strcmp(argv[1], "--version") == 0)) {
		printf("tunbed-traffic %s\n", TUNBED_VERSION);
		return 1;
	}
	if (argc < 2 || (strcmp(argv[1], "server") && strcmp(argv[1], "client"))) {
		log_warnx("expected 'server' or 'client HOST' (see --help)");
		return -EINVAL;
	}
	o->mode = strcmp(argv[1], "server") == 0 ? MODE_SERVER : MODE_CLIENT;
	optind = 2;
	rc = opt_parse(&cli, argc, argv);
	if (rc)
		return rc;
	if (o->mode == MODE_CLIENT) {
		if (optind >= argc) {
			log_warnx("client needs the server's address: tunbed-traffic client HOST");
			return -EINVAL;
		}
		host = argv[optind++];
		if (netaddr_parse(host, &o->client.addr)) {
			log_warnx("bad server address '%s': expected an IPv4 or IPv6 address",
				  host);
			return -EINVAL;
		}
		rc = opt_bench_addr("server address", host, &o->client.addr, o->any_address);
		if (rc)
			return rc;
		o->client.host = host;
	}
	if (optind < argc) {
		log_warnx("unexpected argument '%s'", argv[optind]);
		return -EINVAL;
	}
	return check(o, given);
}
