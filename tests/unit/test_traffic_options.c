/*
 * Unit tests for tunbed-traffic's command line (traffic/options.c): good command lines give
 * the configuration they say, bad ones are refused before anything runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "inet.h"
#include "log.h"
#include "options.h"
#include "parse.h"
#include "thread.h"

static struct options o;
static char err_line[512]; /* what the last run wrote on stderr */

/*
 * Parses a NULL-terminated argument list, with what it prints hidden: --help thrown away, a
 * refusal kept in err_line.
 */
static int run(const char *const *args)
{
	char *argv[32];
	FILE *err_file = tmpfile();
	int argc = 0, rc, out = dup(1), err = dup(2), null = open("/dev/null", O_WRONLY);
	size_t n;

	for (; args[argc]; argc++)
		argv[argc] = (char *)args[argc];
	argv[argc] = NULL;
	fflush(stdout);
	dup2(null, 1);
	dup2(fileno(err_file), 2);
	rc = options_parse(&o, argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(out, 1);
	dup2(err, 2);
	close(out);
	close(err);
	close(null);
	rewind(err_file);
	n = fread(err_line, 1, sizeof(err_line) - 1, err_file);
	err_line[n] = '\0';
	fclose(err_file);
	return rc;
}

#define ARGS(...) ((const char *const[]){ "tunbed-traffic", __VA_ARGS__, NULL })

/* The first CPU or two this process may run on, as a --cpus list: what a machine always has. */
static int own_cpus[2];
static char own_two[32];

static void own_cpu_list(void)
{
	int n = thread_cpu_list(NULL, own_cpus, 2);

	if (n < 1) {
		fprintf(stderr, "cannot read this process's CPUs\n");
		exit(1);
	}
	if (n < 2)
		own_cpus[1] = -1;
	if (n < 2)
		snprintf(own_two, sizeof(own_two), "%d", own_cpus[0]);
	else
		snprintf(own_two, sizeof(own_two), "%d,%d", own_cpus[0], own_cpus[1]);
}

static void test_good(void)
{
	CHECK_INT(run(ARGS("client", "198.18.1.2")), 0);
	CHECK_INT(o.mode, MODE_CLIENT);
	CHECK_INT(o.client.sessions, 1);
	CHECK_U64(o.client.time_ms, 10000);
	CHECK_INT(o.client.port, TRAFFIC_DEFAULT_PORT);
	CHECK_INT(o.client.buffer, 128 << 10);
	CHECK_INT(o.client.pattern, PROTO_PUSH);

	CHECK_INT(
		run(ARGS("client", "2001:2::2", "--sessions", "256", "--time", "2.5", "--warmup",
			 "1", "--pattern", "duplex", "--rate", "2.5g", "--buffer", "64k",
			 "--verify", "--congestion", "reno", "--interval", "0.5", "--json-stream",
			 "--port", "9500", "--threads", "2", "--cpus", own_two, "--sndbuf", "1m")),
		0);
	CHECK_INT(o.client.sessions, 256);
	CHECK_U64(o.client.time_ms, 2500);
	CHECK_U64(o.client.warmup_ms, 1000);
	CHECK_INT(o.client.pattern, PROTO_DUPLEX);
	CHECK_U64(o.client.rate_bps, 2500000000ull);
	CHECK_INT(o.client.buffer, 65536);
	CHECK(o.client.verify);
	CHECK_STR(o.client.congestion, "reno");
	CHECK_U64(o.client.interval_ms, 500);
	CHECK_INT(o.client.output, OUT_JSON_STREAM);
	CHECK_INT(o.client.port, 9500);
	CHECK_INT(o.client.threads, 2);
	CHECK(o.client.has_cpus && CPU_COUNT(&o.client.cpus) == (own_cpus[1] >= 0 ? 2 : 1));
	CHECK_INT(o.client.sndbuf, 1 << 20);
	CHECK_INT(o.client.addr.family, AF_INET6);

	CHECK_INT(run(ARGS("client", "198.18.1.2", "--bytes", "1m")), 0);
	CHECK_U64(o.client.bytes, 1 << 20);
	CHECK_U64(o.client.time_ms, 0);
	CHECK_INT(run(ARGS("client", "198.18.1.2", "--churn", "--bytes", "64k", "--time", "3")), 0);
	CHECK(o.client.churn);
	CHECK_U64(o.client.time_ms, 3000);
	CHECK_INT(run(ARGS("client", "198.18.1.2", "--udp", "--rate", "10m", "--size", "200")), 0);
	CHECK(o.client.udp);
	CHECK_INT(o.client.udp_size, 200);
	CHECK_INT(run(ARGS("client", "198.18.1.2", "--udp", "--pps", "1.5m", "--size", "18",
			   "--sessions", "8", "--sample", "1000")),
		  0);
	CHECK_U64(o.client.pps, 1500000);
	CHECK_U64(o.client.rate_bps, 0);
	CHECK_INT(o.client.udp_size, 18);
	CHECK_INT(o.client.sample, 1000);
	/* Probes alone: no sessions unless asked for. */
	CHECK_INT(run(ARGS("client", "198.18.1.2", "--rr")), 0);
	CHECK_INT(o.client.sessions, 0);
	CHECK_INT(run(ARGS("client", "198.18.1.2", "--rr", "--sessions", "8", "--rr-rate", "0")),
		  0);
	CHECK_INT(o.client.sessions, 8);
	CHECK_INT(o.client.rr_rate, 0);
	CHECK_INT(run(ARGS("server", "--port", "9401", "--bind", "198.18.1.2")), 0);
	CHECK_INT(o.mode, MODE_SERVER);
	CHECK_INT(o.server.port, 9401);
	CHECK(o.server.has_bind);
	CHECK_INT(run(ARGS("server", "--corrupt-offset", "12345")), 0);
	CHECK_U64(o.server.corrupt_at, 12345);
	CHECK_INT(run(ARGS("--help")), 1);
}

static void test_bad(void)
{
	/* Automatic, not static: the argument lists are compound literals. */
	const struct {
		const char *name;
		const char *const *args;
	} rows[] = {
		{ "no role", ARGS("proxy") },
		{ "no host", ARGS("client") },
		{ "host name", ARGS("client", "localhost") },
		{ "host outside", ARGS("client", "192.0.2.1") },
		{ "two hosts", ARGS("client", "198.18.1.2", "198.18.1.3") },
		{ "sessions 0", ARGS("client", "198.18.1.2", "--sessions", "0") },
		{ "sessions 10001", ARGS("client", "198.18.1.2", "--sessions", "10001") },
		{ "time 0", ARGS("client", "198.18.1.2", "--time", "0") },
		{ "time text", ARGS("client", "198.18.1.2", "--time", "ten") },
		{ "rate", ARGS("client", "198.18.1.2", "--rate", "-1") },
		{ "buffer 0", ARGS("client", "198.18.1.2", "--buffer", "0") },
		{ "buffer 32m", ARGS("client", "198.18.1.2", "--buffer", "32m") },
		{ "pattern", ARGS("client", "198.18.1.2", "--pattern", "pushpull") },
		{ "shutdown", ARGS("client", "198.18.1.2", "--shutdown", "now") },
		{ "size 17",
		  ARGS("client", "198.18.1.2", "--udp", "--rate", "1m", "--size", "17") },
		{ "pps 0", ARGS("client", "198.18.1.2", "--udp", "--pps", "0") },
		{ "pps 101m", ARGS("client", "198.18.1.2", "--udp", "--pps", "101m") },
		{ "pps and rate",
		  ARGS("client", "198.18.1.2", "--udp", "--pps", "1k", "--rate", "1m") },
		{ "pps without udp", ARGS("client", "198.18.1.2", "--pps", "1k") },
		{ "sample without udp", ARGS("client", "198.18.1.2", "--sample", "10") },
		{ "sample 0",
		  ARGS("client", "198.18.1.2", "--udp", "--pps", "1k", "--sample", "0") },
		{ "pps on server", ARGS("server", "--pps", "1k") },
		{ "rr-size 15", ARGS("client", "198.18.1.2", "--rr", "--rr-size", "15") },
		{ "port 0", ARGS("client", "198.18.1.2", "--port", "0") },
		{ "time and bytes", ARGS("client", "198.18.1.2", "--time", "1", "--bytes", "1m") },
		{ "warmup and bytes",
		  ARGS("client", "198.18.1.2", "--bytes", "1m", "--warmup", "1") },
		{ "churn without bytes", ARGS("client", "198.18.1.2", "--churn") },
		{ "udp without rate", ARGS("client", "198.18.1.2", "--udp") },
		{ "udp pull",
		  ARGS("client", "198.18.1.2", "--udp", "--rate", "1m", "--pattern", "pull") },
		{ "client option on server", ARGS("server", "--sessions", "2") },
		{ "server option on client", ARGS("client", "198.18.1.2", "--bind", "198.18.1.1") },
		{ "bind outside", ARGS("server", "--bind", "10.0.0.1") },
		{ "unknown", ARGS("client", "198.18.1.2", "--nope") },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		CHECK_ROW(run(rows[i].args) == -EINVAL, rows[i].name);
}

/*
 * Addresses outside the benchmarking ranges: refused with one line naming --any-address, taken
 * with it wherever it stands. Parsing only: nothing here connects anywhere.
 */
static void test_any_address(void)
{
	static const char outside[] = " is outside the benchmarking ranges 198.18.0.0/15 and "
				      "2001:2::/48 (--any-address allows it)\n";
	char want[256];

	CHECK_INT(run(ARGS("client", "198.18.1.2")), 0);
	CHECK(!o.any_address && !o.client.any_address);

	CHECK_INT(run(ARGS("client", "10.1.2.3")), -EINVAL);
	snprintf(want, sizeof(want), "tunbed-traffic: server address 10.1.2.3%s", outside);
	CHECK_STR(err_line, want);
	CHECK_INT(run(ARGS("client", "2001:db8::1", "--time", "1")), -EINVAL);
	snprintf(want, sizeof(want), "tunbed-traffic: server address 2001:db8::1%s", outside);
	CHECK_STR(err_line, want);
	CHECK_INT(run(ARGS("server", "--bind", "10.0.0.1")), -EINVAL);
	snprintf(want, sizeof(want), "tunbed-traffic: --bind 10.0.0.1%s", outside);
	CHECK_STR(err_line, want);

	/* Before the host, after it, after other options: the same. */
	CHECK_INT(run(ARGS("client", "--any-address", "10.1.2.3")), 0);
	CHECK_STR(err_line, "");
	CHECK(o.any_address && o.client.any_address);
	CHECK_STR(o.client.host, "10.1.2.3");
	CHECK_INT(run(ARGS("client", "10.1.2.3", "--time", "1", "--any-address", "--json")), 0);
	CHECK(o.client.any_address);
	CHECK_INT(o.client.output, OUT_JSON);
	CHECK_INT(run(ARGS("client", "2001:db8::1", "--any-address")), 0);
	CHECK_INT(o.client.addr.family, AF_INET6);
	CHECK_INT(run(ARGS("server", "--bind", "10.0.0.1", "--any-address")), 0);
	CHECK(o.server.has_bind && o.any_address);
	/* A server without --bind takes it too: the runner gives it to every tool alike. */
	CHECK_INT(run(ARGS("server", "--port", "9401", "--any-address")), 0);
	CHECK(o.any_address);
	/* It allows addresses, nothing else: a bad one is still bad. */
	CHECK_INT(run(ARGS("client", "localhost", "--any-address")), -EINVAL);
	CHECK_INT(run(ARGS("client", "--any-address", "10.1.2.3", "--bind", "10.0.0.1")), -EINVAL);
}

/*
 * --cpus names CPUs the threads will be pinned to: one the machine lacks is refused while the
 * options are read, for client and server alike, with the CPUs there are (not "cannot start
 * thread 0: Invalid argument" once the test has begun).
 */
static void test_cpus(void)
{
	char own[256], want[512];
	cpu_set_t set;

	CHECK(sched_getaffinity(0, sizeof(set), &set) == 0);
	CHECK(format_cpulist(&set, own, sizeof(own)) > 0);
	snprintf(want, sizeof(want),
		 "tunbed-traffic: --cpus 1023: no CPU 1023 on this machine (CPUs %s)\n", own);
	CHECK_INT(run(ARGS("client", "198.18.1.2", "--cpus", "1023")), -EINVAL);
	CHECK_STR(err_line, want);
	CHECK_INT(run(ARGS("server", "--cpus", "1023")), -EINVAL);
	CHECK_STR(err_line, want);
	snprintf(want, sizeof(want),
		 "tunbed-traffic: --cpus %d,1023: no CPU 1023 on this machine (CPUs %s)\n",
		 own_cpus[0], own);
	snprintf(own, sizeof(own), "%d,1023", own_cpus[0]);
	CHECK_INT(run(ARGS("server", "--threads", "2", "--cpus", own)), -EINVAL);
	CHECK_STR(err_line, want);
	CHECK_INT(run(ARGS("server", "--cpus", own_two)), 0);
	CHECK_STR(err_line, "");
}

/* The ping probes: their defaults, their values, and the one line each mistake gets. */
static void test_icmp(void)
{
	/* Automatic, not static: the argument lists are compound literals. */
	const struct {
		const char *name;
		const char *const *args;
		const char *line;
	} bad[] = {
		{ "count 0", ARGS("client", "198.18.1.2", "--icmp", "--icmp-count", "0"),
		  "tunbed-traffic: bad value '0' for --icmp-count: expected 1 to 100000\n" },
		{ "count 100001", ARGS("client", "198.18.1.2", "--icmp", "--icmp-count", "100001"),
		  "tunbed-traffic: bad value '100001' for --icmp-count: expected 1 to 100000\n" },
		{ "interval 0", ARGS("client", "198.18.1.2", "--icmp", "--icmp-interval", "0"),
		  "tunbed-traffic: bad value '0' for --icmp-interval: expected seconds from 0.001 "
		  "to "
		  "60\n" },
		{ "size 15", ARGS("client", "198.18.1.2", "--icmp", "--icmp-size", "15"),
		  "tunbed-traffic: bad value '15' for --icmp-size: expected 16 to 65499\n" },
		{ "size 65500", ARGS("client", "198.18.1.2", "--icmp", "--icmp-size", "65500"),
		  "tunbed-traffic: bad value '65500' for --icmp-size: expected 16 to 65499\n" },
		{ "count without --icmp", ARGS("client", "198.18.1.2", "--icmp-count", "5"),
		  "tunbed-traffic: --icmp-count needs --icmp\n" },
		{ "alone by bytes", ARGS("client", "198.18.1.2", "--icmp", "--bytes", "1m"),
		  "tunbed-traffic: --icmp alone sends --icmp-count probes: no --bytes\n" },
		{ "on a server", ARGS("server", "--icmp"),
		  "tunbed-traffic: --icmp is a client option\n" },
	};

	CHECK_INT(run(ARGS("client", "198.18.1.2", "--icmp")), 0);
	CHECK(o.client.icmp);
	CHECK_INT(o.client.sessions, 0);
	CHECK_INT(o.client.icmp_count, 100);
	CHECK_U64(o.client.icmp_interval_ms, 200);
	CHECK_INT(o.client.icmp_size, 56);
	CHECK_INT(run(ARGS("client", "198.18.1.2", "--sessions", "4", "--icmp", "--icmp-count",
			   "20", "--icmp-interval", "0.05", "--icmp-size", "1400", "--rr")),
		  0);
	CHECK(o.client.icmp && o.client.rr);
	CHECK_INT(o.client.sessions, 4);
	CHECK_INT(o.client.icmp_count, 20);
	CHECK_U64(o.client.icmp_interval_ms, 50);
	CHECK_INT(o.client.icmp_size, 1400);
	CHECK_INT(run(ARGS("client", "198.18.1.2", "--icmp", "--bytes", "1m", "--sessions", "2")),
		  0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_ROW(run(bad[i].args) == -EINVAL, bad[i].name);
		CHECK_STR(err_line, bad[i].line);
	}
}

/* --dscp (client and server) and --ecn (client): the DS field of the sessions' packets. */
static void test_tos(void)
{
	/* Automatic, not static: the argument lists are compound literals. */
	const struct {
		const char *name;
		const char *const *args;
		const char *line;
	} bad[] = {
		{ "dscp 64", ARGS("client", "198.18.1.2", "--dscp", "64"),
		  "tunbed-traffic: bad value '64' for --dscp: expected a DSCP from 0 to 63\n" },
		{ "dscp -1", ARGS("server", "--dscp", "-1"),
		  "tunbed-traffic: bad value '-1' for --dscp: expected a DSCP from 0 to 63\n" },
		{ "dscp ef", ARGS("client", "198.18.1.2", "--dscp", "ef"),
		  "tunbed-traffic: bad value 'ef' for --dscp: expected a DSCP from 0 to 63\n" },
		{ "ecn ect2",
		  ARGS("client", "198.18.1.2", "--udp", "--rate", "1m", "--ecn", "ect2"),
		  "tunbed-traffic: bad value 'ect2' for --ecn: expected on, off, not-ect, ect0, "
		  "ect1 or ce\n" },
		{ "ecn CE", ARGS("client", "198.18.1.2", "--udp", "--rate", "1m", "--ecn", "CE"),
		  "tunbed-traffic: bad value 'CE' for --ecn: expected on, off, not-ect, ect0, ect1 "
		  "or ce\n" },
		{ "a codepoint for TCP", ARGS("client", "198.18.1.2", "--ecn", "ect1"),
		  "tunbed-traffic: --ecn ect1 is for --udp: TCP's ECN codepoints are the kernel's "
		  "(--ecn on or off)\n" },
		{ "ecn on a server", ARGS("server", "--ecn", "on"),
		  "tunbed-traffic: --ecn is a client option\n" },
	};
	static const struct {
		const char *name;
		enum client_ecn ecn;
		uint8_t cp;
	} names[] = {
		{ "off", CLIENT_ECN_OFF, IP_ECN_NOT_ECT },
		{ "on", CLIENT_ECN_ON, IP_ECN_ECT0 },
		{ "not-ect", CLIENT_ECN_CODEPOINT, IP_ECN_NOT_ECT },
		{ "ect0", CLIENT_ECN_CODEPOINT, IP_ECN_ECT0 },
		{ "ect1", CLIENT_ECN_CODEPOINT, IP_ECN_ECT1 },
		{ "ce", CLIENT_ECN_CODEPOINT, IP_ECN_CE },
	};

	CHECK_INT(run(ARGS("client", "198.18.1.2")), 0);
	CHECK_INT(o.client.dscp, 0);
	CHECK_INT(o.client.ecn, CLIENT_ECN_OFF);
	CHECK_INT(o.client.ecn_codepoint, IP_ECN_NOT_ECT);
	CHECK_INT(run(ARGS("client", "198.18.1.2", "--dscp", "46", "--ecn", "on")), 0);
	CHECK_INT(o.client.dscp, 46);
	CHECK_INT(o.client.ecn, CLIENT_ECN_ON);
	CHECK_INT(run(ARGS("client", "198.18.1.2", "--dscp", "63", "--ecn", "off")), 0);
	CHECK_INT(o.client.dscp, 63);
	CHECK_INT(run(ARGS("server", "--dscp", "12")), 0);
	CHECK_INT(o.server.dscp, 12);
	CHECK_INT(run(ARGS("server")), 0);
	CHECK_INT(o.server.dscp, 0);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		CHECK_ROW(run(ARGS("client", "198.18.1.2", "--udp", "--rate", "1m", "--ecn",
				   names[i].name)) == 0,
			  names[i].name);
		CHECK_ROW(o.client.ecn == names[i].ecn && o.client.ecn_codepoint == names[i].cp,
			  names[i].name);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_ROW(run(bad[i].args) == -EINVAL, bad[i].name);
		CHECK_STR(err_line, bad[i].line);
	}
}

/*
 * --pairs: its file read once the options are (--any-address after it counts), its refusals
 * one line naming file and line, not with --udp nor on the server.
 */
static void test_pairs(void)
{
	char dir[] = "/tmp/test_traffic_options.XXXXXX", path[64], want[256];
	FILE *fp;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/pairs", dir);
	fp = fopen(path, "w");
	CHECK(fp != NULL);
	if (!fp)
		return;
	fputs("198.18.64.1 198.18.128.1\n10.0.0.1 10.0.0.2\n", fp);
	fclose(fp);

	CHECK_INT(run(ARGS("client", "198.18.0.2", "--pairs", path)), -EINVAL);
	snprintf(want, sizeof(want),
		 "tunbed-traffic: --pairs %s:2: local address 10.0.0.1 is outside the "
		 "benchmarking ranges 198.18.0.0/15 and 2001:2::/48 (--any-address allows it)\n",
		 path);
	CHECK_STR(err_line, want);
	CHECK(o.client.pairs == NULL);
	/* --any-address after --pairs counts all the same. */
	CHECK_INT(run(ARGS("client", "198.18.0.2", "--pairs", path, "--sessions", "3",
			   "--any-address")),
		  0);
	CHECK_INT(o.client.npairs, 2);
	CHECK(o.client.pairs[1].remote.bytes[3] == 2 && o.client.pairs[1].remote.family == AF_INET);
	free(o.client.pairs);

	CHECK_INT(run(ARGS("client", "198.18.0.2", "--pairs", path, "--udp", "--rate", "1m",
			   "--any-address")),
		  -EINVAL);
	CHECK_STR(err_line,
		  "tunbed-traffic: --pairs spreads TCP sessions: not with --udp, nor without "
		  "sessions\n");
	CHECK_INT(run(ARGS("server", "--pairs", path)), -EINVAL);
	CHECK_STR(err_line, "tunbed-traffic: --pairs is a client option\n");
	unlink(path);
	CHECK_INT(run(ARGS("client", "198.18.0.2", "--pairs", path)), -EINVAL);
	snprintf(want, sizeof(want),
		 "tunbed-traffic: --pairs %s: cannot open: No such file or directory\n", path);
	CHECK_STR(err_line, want);
	CHECK_INT(run(ARGS("client", "198.18.0.2", "--pairs", dir)), -EINVAL);
	snprintf(want, sizeof(want), "tunbed-traffic: --pairs %s: not a regular file\n", dir);
	CHECK_STR(err_line, want);
	rmdir(dir);
}

int main(void)
{
	log_init("tunbed-traffic", LOG_LEVEL_WARN); /* the name main gives the lines */
	own_cpu_list();
	test_good();
	test_bad();
	test_pairs();
	test_any_address();
	test_cpus();
	test_icmp();
	test_tos();
	return check_done("test_traffic_options");
}
