/*
 * Unit tests for the topology parser and validator: good files read back field by field, and
 * every refusal with the exact line and message a user sees.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "check.h"
#include "topo.h"
#include "topo_plan.h"

static struct topo *t;

static int parse(const char *text, struct line_error *err)
{
	return topo_parse(text, strlen(text), t, err);
}

static const char good[] = "; a comment\n"
			   "# another\n"
			   "[topology]\n"
			   "name = demo\n"
			   "prefix = tb_x\n"
			   "\n"
			   "[host client]\n"
			   "cpus = 0-1\n"
			   "route = 198.18.3.0/24 via 198.18.1.1 mtu 1400 ; inline comment\n"
			   "route = 2001:2:0:3::/64 via 2001:2:0:1::1\n"
			   "[ host gw ]\n"
			   "    forward = yes\n"
			   "\tsysctl.net.ipv4.conf.all.rp_filter = 2\n"
			   "route = 198.18.3.0/24 dev up\n"
			   "[host server]\r\n"
			   "[link down]\n"
			   "a = client\n"
			   "b = gw\n"
			   "a.addr = 198.18.1.2/24, 2001:2:0:1::2/64\n"
			   "b.addr = 198.18.1.1/24\n"
			   "b.addr = 2001:2:0:1::1/64\n"
			   "mtu = 9000\n"
			   "queues = 2\n"
			   "rate = 2.5gbit\n"
			   "gro = off\n"
			   "tso = on\n"
			   "[link up]\n"
			   "a = gw\n"
			   "b = server\n"
			   "b.ifname = eth0\n"
			   "burst = 64k\n"
			   "limit = 1m\n"
			   "rate = 100mbit\n";

static void test_good(void)
{
	struct line_error err;
	const struct topo_link *l;
	char buf[NETPREFIX_STRLEN];
	uint32_t burst, limit;

	CHECK_INT(parse(good, &err), 0);
	if (err.msg[0])
		fprintf(stderr, "unexpected error: line %d: %s\n", err.line, err.msg);
	CHECK_STR(t->name, "demo");
	CHECK_STR(t->prefix, "tb_x");
	CHECK_INT(t->nhosts, 3);
	CHECK_INT(t->nlinks, 2);
	CHECK_INT(t->nroutes, 3);
	CHECK_STR(t->hosts[1].name, "gw");
	CHECK_INT(t->hosts[1].line, 11);
	CHECK(t->hosts[1].forward);
	CHECK(!t->hosts[0].forward);
	CHECK(t->hosts[0].has_cpus && CPU_COUNT(&t->hosts[0].cpus) == 2);
	CHECK_INT(t->hosts[1].nsysctls, 1);
	CHECK_STR(t->hosts[1].sysctls[0].name, "net.ipv4.conf.all.rp_filter");
	CHECK_STR(t->hosts[1].sysctls[0].value, "2");
	CHECK_STR(t->hosts[2].name, "server");

	l = &t->links[0];
	CHECK_STR(l->name, "down");
	CHECK_INT(l->end[0].host, 0);
	CHECK_INT(l->end[1].host, 1);
	CHECK_INT(l->end[0].naddrs, 2);
	CHECK_INT(l->end[1].naddrs, 2);
	CHECK_STR(netaddr_format_prefix(&l->end[0].addrs[1], buf), "2001:2:0:1::2/64");
	CHECK_INT(l->end[1].addr_lines[1], 21);
	CHECK_INT(l->mtu, 9000);
	CHECK_INT(l->queues, 2);
	CHECK_U64(l->rate, 2500000000ull);
	CHECK_INT(l->gro, TOPO_OFF);
	CHECK_INT(l->tso, TOPO_ON);
	/* 2.5 Gbit/s is 312500 bytes per ms; the queue adds 10 ms. */
	topo_link_tbf(l, &burst, &limit);
	CHECK_INT(burst, 312500);
	CHECK_INT(limit, 312500 + 3125000);

	l = &t->links[1];
	CHECK_STR(l->end[0].ifname, "up");
	CHECK_STR(l->end[1].ifname, "eth0");
	CHECK_INT(l->gro, TOPO_DEFAULT);
	topo_link_tbf(l, &burst, &limit);
	CHECK_INT(burst, 65536);
	CHECK_INT(limit, 1 << 20);

	CHECK_INT(t->routes[0].mtu, 1400);
	CHECK(t->routes[0].has_via);
	CHECK_INT(t->routes[0].line, 9);
	CHECK_STR(t->routes[2].dev, "up");
	CHECK(!t->routes[2].has_via);
	CHECK_INT(t->routes[2].host, 1);
}

static void test_defaults(void)
{
	struct line_error err;
	uint32_t burst, limit;

	CHECK_INT(parse("[host a]\n[host b]\n[link l]\na=a\nb=b\nrate=8kbit\n", &err), 0);
	CHECK_STR(t->prefix, TOPO_DEFAULT_PREFIX);
	CHECK_STR(t->name, "");
	CHECK_INT(t->links[0].mtu, 0);
	/* A slow link still gets a bucket that holds a full frame and TOPO_BURST_MIN. */
	topo_link_tbf(&t->links[0], &burst, &limit);
	CHECK_INT(burst, TOPO_BURST_MIN);
	CHECK_INT(limit, TOPO_BURST_MIN + 10);
}

struct bad_row {
	const char *text;
	int line;
	const char *msg;
};

#define HOSTS "[host a]\n[host b]\n"

static const struct bad_row bad_rows[] = {
	{ "", 0, "no [host NAME] section: a topology needs at least one host" },
	{ "[topology]\nname = x\n", 0,
	  "no [host NAME] section: a topology needs at least one host" },
	{ "[host a]\ncolour = red\n", 2, "unknown key 'colour' in [host a]" },
	{ "[hots a]\n", 1,
	  "unknown section [hots a]: expected [topology], [host NAME] or [link NAME]" },
	{ "[host]\n", 1, "section [host] needs a name: [host NAME]" },
	{ "[host a b]\n", 1, "section [host a b]: one name only, got 'b' after 'a'" },
	{ "[host a\n", 1, "missing ']' in section header '[host a'" },
	{ "[host a] x\n", 1, "text after section header: 'x'" },
	{ "[]\n", 1, "empty section header '[]'" },
	{ "[topology x]\n", 1, "section [topology] takes no name, got 'x'" },
	{ "[topology]\n[topology]\n[host a]\n", 2,
	  "duplicate section [topology] (first at line 1)" },
	{ "mtu = 1\n[host a]\n", 1, "key 'mtu' outside any section" },
	{ "[host a]\njunk\n", 2, "expected 'key = value' or a [section]" },
	{ "[host a]\nforward =\n", 2, "key 'forward' has no value" },
	{ "[host a]\n[host a]\n", 2, "duplicate host 'a' (first defined at line 1)" },
	{ "[host a!]\n", 1, "bad host name 'a!': use 1 to 31 letters, digits, '_' or '-'" },
	{ "[host a]\nforward = yes\nforward = no\n", 3, "duplicate key 'forward' in [host a]" },
	{ "[host a]\nforward = maybe\n", 2, "bad value 'maybe' for forward: expected yes or no" },
	{ "[host a]\ncpus = 3-1\n", 2,
	  "bad value '3-1' for cpus: expected a CPU list such as 0-3,6" },
	{ "[topology]\nprefix = t-b\n[host a]\n", 2,
	  "bad value 't-b' for prefix: use 1 to 15 letters, digits or '_' (no '-')" },
	{ "[host a]\nsysctl.kernel.panic = 1\n", 2,
	  "sysctl 'kernel.panic' is not per namespace: only net.* can be set" },
	{ "[host a]\nsysctl.net..x = 1\n", 2, "bad sysctl name 'net..x'" },
	{ "[host a]\nsysctl.net.x = 1\nsysctl.net.x = 2\n", 3,
	  "duplicate sysctl 'net.x' in [host a] (first at line 2)" },
	{ "[host a]\nsysctl.net.ipv4.conf.all.this_is_a_very_long_name_x = 1\n", 2,
	  "key too long: at most 49 characters" },
	{ "[link way_too_long_name]\n", 1,
	  "bad link name 'way_too_long_name': use 1 to 15 letters, digits, '_' or '-' (it names "
	  "the interfaces)" },
	{ HOSTS "[link l]\n[link l]\n", 4, "duplicate link 'l' (first defined at line 3)" },
	{ HOSTS "[link l]\na = a\n", 3, "link 'l' has no end b: add 'b = HOST'" },
	{ HOSTS "[link l]\na = a\nb = c\n", 5, "link 'l': end b is on undefined host 'c'" },
	{ HOSTS "[link l]\na = a\nb = a\n", 5, "link 'l' joins host 'a' to itself" },
	{ HOSTS "[link l]\na = a\nb = b\na.addr = 198.18.1.300/24\n", 6,
	  "bad address '198.18.1.300/24' for a.addr: expected ADDR/LEN" },
	{ HOSTS "[link l]\na = a\nb = b\na.addr = 198.18.1.3\n", 6,
	  "bad address '198.18.1.3' for a.addr: expected ADDR/LEN" },
	{ HOSTS "[link l]\na = a\nb = b\na.addr = 10.0.0.1/24\n", 6,
	  "address '10.0.0.1/24' is outside 198.18.0.0/15 and 2001:2::/48" },
	{ HOSTS "[link l]\na = a\nb = b\na.addr = 198.18.1.1/8\n", 6,
	  "address '198.18.1.1/8' is outside 198.18.0.0/15 and 2001:2::/48" },
	{ HOSTS "[link l]\na = a\nb = b\na.addr = 2001:db8::1/64\n", 6,
	  "address '2001:db8::1/64' is outside 198.18.0.0/15 and 2001:2::/48" },
	{ HOSTS "[link l]\na = a\nb = b\na.addr = 198.18.1.0/24\n", 6,
	  "address '198.18.1.0/24' is the network itself: give a host address" },
	{ HOSTS "[link l]\na = a\nb = b\na.addr = 198.18.1.1/24\nb.addr = 198.18.1.1/24\n", 7,
	  "address 198.18.1.1/24 is already on link 'l' (line 6)" },
	{ HOSTS "[link l]\na = a\nb = b\nmtu = 1000\na.addr = 2001:2::1/64\n", 7,
	  "link 'l': IPv6 address 2001:2::1/64 needs mtu 1280 or more, not 1000" },
	{ HOSTS "[link l]\nmtu = 67\n", 4, "bad value '67' for mtu: expected 68 to 65535" },
	{ HOSTS "[link l]\nmtu = 65536\n", 4, "bad value '65536' for mtu: expected 68 to 65535" },
	{ HOSTS "[link l]\nmtu = 1500\nmtu = 1400\n", 5, "duplicate key 'mtu' in [link l]" },
	{ HOSTS "[link l]\nqueues = 0\n", 4, "bad value '0' for queues: expected 1 to 64" },
	{ HOSTS "[link l]\nrate = 10 pigeons\n", 4,
	  "bad value '10 pigeons' for rate: expected a bit rate from 8kbit, e.g. 1gbit" },
	{ HOSTS "[link l]\nrate = 40gbit\n", 4,
	  "rate '40gbit' is above the 32gbit that tbf takes" },
	{ HOSTS "[link l]\nburst = 0\n", 4,
	  "bad value '0' for burst: expected a size such as 64k" },
	{ HOSTS "[link l]\ngro = of\n", 4, "bad value 'of' for gro: expected on or off" },
	{ HOSTS "[link l]\na.ifname = lo\n", 4,
	  "bad value 'lo' for a.ifname: use 1 to 15 letters, digits, '_' or '-', not lo" },
	{ HOSTS "[link l]\na = a\nb = b\n[link m]\na = a\nb = b\na.ifname = l\n", 6,
	  "link 'm': host 'a' already has an interface 'l' (link 'l')" },
	{ "[host a]\nroute = default via 198.18.0.1\n", 2,
	  "route 'default' would reach beyond 198.18.0.0/15 and 2001:2::/48: name a prefix inside "
	  "them" },
	{ "[host a]\nroute = 0.0.0.0/0 via 198.18.0.1\n", 2,
	  "route destination '0.0.0.0/0' is outside 198.18.0.0/15 and 2001:2::/48" },
	{ "[host a]\nroute = 198.18.3.1/24 via 198.18.0.1\n", 2,
	  "route destination '198.18.3.1/24' has host bits set: did you mean 198.18.3.0/24?" },
	{ "[host a]\nroute = 198.18.3.0/24\n", 2,
	  "route '198.18.3.0/24' needs 'via ADDR' or 'dev LINK'" },
	{ "[host a]\nroute = 198.18.3.0/24 via\n", 2,
	  "route '198.18.3.0/24 via': 'via' needs a value" },
	{ "[host a]\nroute = 198.18.3.0/24 via 2001:2::1\n", 2,
	  "route '198.18.3.0/24 via 2001:2::1': next hop '2001:2::1' is of the other family" },
	{ "[host a]\nroute = 198.18.3.0/24 via 198.18.0.1 mtu 9\n", 2,
	  "route '198.18.3.0/24 via 198.18.0.1 mtu 9': bad mtu '9': expected 68 to 65535" },
	{ "[host a]\nroute = 198.18.3.0/24 gateway 198.18.0.1\n", 2,
	  "route '198.18.3.0/24 gateway 198.18.0.1': unexpected 'gateway': expected DEST [via "
	  "ADDR] [dev LINK] [mtu N]" },
	{ HOSTS "[link l]\na = a\nb = b\na.addr = 198.18.0.1/24\n[host c]\nroute = 198.18.3.0/24 "
		"via 198.18.0.2\n",
	  8,
	  "route '198.18.3.0/24 via 198.18.0.2' on host 'c': next hop 198.18.0.2 is not on any of "
	  "its links" },
	{ "[host a]\nroute = 198.18.3.0/24 via 198.18.9.9\n", 2,
	  "route '198.18.3.0/24 via 198.18.9.9' on host 'a': next hop 198.18.9.9 is not on any of "
	  "its links" },
	{ HOSTS "[link l]\na = a\nb = b\na.addr = 198.18.0.1/24\n[host c]\n"
		"[link m]\na=a\nb=c\na.addr=198.18.5.1/24\n"
		"[host d]\nroute = 198.18.3.0/24 via 198.18.0.2 dev m\n",
	  13, "route '198.18.3.0/24 via 198.18.0.2 dev m': host 'd' has no interface 'm'" },
	{ "[host a]\nroute = 198.18.3.0/24 via 198.18.0.2 dev m\n"
	  "[host b]\n[host c]\n[link l]\na = a\nb = b\na.addr = 198.18.0.1/24\n"
	  "[link m]\na=a\nb=c\na.addr=198.18.5.1/24\n",
	  2,
	  "route '198.18.3.0/24 via 198.18.0.2 dev m' on host 'a': next hop 198.18.0.2 is not on "
	  "any of its links (or not on the one named)" },
	{ "[host a]\nroute = 198.18.3.0/24 dev nope\n", 2,
	  "route '198.18.3.0/24 dev nope': host 'a' has no interface 'nope'" },
	{ "[host a]\nroute = 198.18.3.0/24 via 198.18.0.1\n[host b]\n[link l]\na=a\nb=b\n"
	  "a.addr=198.18.0.1/24\n",
	  2,
	  "route '198.18.3.0/24 via 198.18.0.1' on host 'a': next hop 198.18.0.1 is not on any of "
	  "its links" },
	{ "[host a]\nroute = 198.18.3.0/24 via 198.18.0.2\nroute = 198.18.3.0/24 via 198.18.0.3\n"
	  "[host b]\n[link l]\na=a\nb=b\na.addr=198.18.0.1/24\n",
	  3, "route '198.18.3.0/24 via 198.18.0.3' on host 'a': same destination as line 2" },
	{ "[host a]\nroute = local 198.18.64.0/18 dev lo\n", 2,
	  "route 'local 198.18.64.0/18 dev lo': unexpected 'dev': a local route takes no via, dev "
	  "or mtu" },
	{ "[host a]\nroute = local\n", 2,
	  "empty route: expected DEST [via ADDR] [dev LINK] [mtu N], or local DEST" },
	{ "[host a]\nroute = local 10.0.0.0/8\n", 2,
	  "route destination '10.0.0.0/8' is outside 198.18.0.0/15 and 2001:2::/48" },
	{ "[host a]\nroute = local 198.18.64.1/18\n", 2,
	  "route destination '198.18.64.1/18' has host bits set: did you mean 198.18.64.0/18?" },
	{ "[host a]\nroute = local 198.18.64.0/18\nroute = 198.18.64.0/18 dev l\n[host b]\n"
	  "[link l]\na=a\nb=b\n",
	  3, "route '198.18.64.0/18 dev l' on host 'a': same destination as line 2" },
	{ "[host a]\nroute = local 198.18.64.0/18\nroute = local 2001:2:0:4000::/50\n", 0, NULL },
	/* Hosts, links and routes may come in any order; a route may precede its link. */
	{ "[host a]\nroute = 198.18.3.0/24 via 198.18.0.2\n[link l]\na=a\nb=b\n"
	  "a.addr=198.18.0.1/24\n[host b]\n",
	  0, NULL },
	{ "[link l]\na=a\nb=b\n[host b]\n[host a]\n", 0, NULL },
};

static void run_bad(const struct bad_row *rows, size_t n)
{
	struct line_error err;

	for (size_t i = 0; i < n; i++) {
		int rc = parse(rows[i].text, &err);

		if (!rows[i].msg) {
			CHECK_ROW(rc == 0, rows[i].text);
			if (rc)
				fprintf(stderr, "  got line %d: %s\n", err.line, err.msg);
			continue;
		}
		CHECK_ROW(rc == -EINVAL, rows[i].text);
		CHECK_ROW(err.line == rows[i].line, rows[i].text);
		CHECK_ROW(strcmp(err.msg, rows[i].msg) == 0, rows[i].text);
		if (err.line != rows[i].line || strcmp(err.msg, rows[i].msg) != 0)
			fprintf(stderr, "  got line %d: %s\n  want line %d: %s\n", err.line,
				err.msg, rows[i].line, rows[i].msg);
	}
}

static void test_limits(void)
{
	struct line_error err;
	char *text = malloc(1 << 16), line[256];
	size_t used = 0;

	/* One host too many. */
	for (int i = 0; i <= TOPO_MAX_HOSTS; i++)
		used += (size_t)snprintf(text + used, (1 << 16) - used, "[host h%d]\n", i);
	CHECK_INT(topo_parse(text, used, t, &err), -EINVAL);
	CHECK_INT(err.line, TOPO_MAX_HOSTS + 1);
	CHECK_STR(err.msg, "too many hosts: at most 32");

	/* A line longer than libinih's buffer is refused, not split in two. */
	memset(line, 'x', sizeof(line));
	memcpy(line, "[host a]\nk = ", 13);
	line[sizeof(line) - 1] = '\0';
	CHECK_INT(parse(line, &err), -EINVAL);
	CHECK_INT(err.line, 2);
	CHECK_STR(err.msg, "line too long: at most 198 characters");

	/* NUL bytes mean a binary file. */
	CHECK_INT(topo_parse("[host a]\n\0x\n", 12, t, &err), -EINVAL);
	CHECK_STR(err.msg, "NUL byte in line: this is not a text file");
	free(text);
}

static void test_load(void)
{
	struct line_error err;

	CHECK_INT(topo_load("/nonexistent/x.topo", t, &err), -ENOENT);
	CHECK_STR(err.msg, "cannot open: No such file or directory");
	CHECK_INT(err.line, 0);
	CHECK_INT(topo_load(TUNBED_TOPO_DIR "/ras.topo", t, &err), 0);
	CHECK_INT(t->nhosts, 4);
	CHECK_INT(topo_load(TUNBED_TOPO_DIR "/ras6.topo", t, &err), 0);
	CHECK_INT(t->links[1].end[0].addrs[0].addr.family, AF_INET6);
	CHECK_INT(topo_load(TUNBED_TOPO_DIR "/direct.topo", t, &err), 0);
	CHECK_INT(t->links[0].end[1].naddrs, 2);
	CHECK_INT(topo_load(TUNBED_TOPO_DIR "/tunnels.topo", t, &err), 0);
	CHECK(t->routes[0].local);
	CHECK_INT(t->routes[0].dst.len, 18);
	CHECK(!t->routes[2].local);
}

static void test_plan(void)
{
	static struct topo_plan plan;
	struct line_error err;
	char buf[512];

	CHECK_INT(parse(good, &err), 0);
	CHECK_INT(topo_plan_build(t, &plan), 0);
	/* 3 netns, 3 x (lo + 2 DAD sysctls), 2 veth, 2 features x 2 ends, 4 addrs, 4 ups,
	 * 4 qdiscs, 3 x 2 forwarding + 1 user sysctl, 3 routes. */
	CHECK_INT(plan.nsteps, 3 + 9 + 2 + 4 + 4 + 4 + 4 + 7 + 3);
	topo_step_describe(t, "p", &plan.steps[0], buf, sizeof(buf));
	CHECK_STR(buf, "ip netns add p-client");
	topo_step_describe(t, "p", &plan.steps[12], buf, sizeof(buf));
	CHECK_STR(buf, "ip -n p-client link add down mtu 9000 numtxqueues 2 numrxqueues 2 type "
		       "veth peer name down netns p-gw");
	topo_step_describe(t, "p", &plan.steps[13], buf, sizeof(buf));
	CHECK_STR(buf, "ip netns exec p-client ethtool -K down gro off");
	topo_step_describe(t, "p", &plan.steps[plan.nsteps - 3], buf, sizeof(buf));
	CHECK_STR(buf, "ip -n p-client route add 198.18.3.0/24 via 198.18.1.1 mtu 1400");
	CHECK_INT(plan.steps[plan.nsteps - 3].line, 9);
	topo_step_describe(t, "p", &plan.steps[plan.nsteps - 1], buf, sizeof(buf));
	CHECK_STR(buf, "ip -n p-gw route add 198.18.3.0/24 dev up");
	for (int i = 0; i < plan.nsteps; i++) {
		if (plan.steps[i].kind != TOPO_STEP_QDISC)
			continue;
		topo_step_describe(t, "p", &plan.steps[i], buf, sizeof(buf));
		CHECK_STR(buf, "tc -n p-client qdisc replace dev down root tbf rate 2.5gbit burst "
			       "312500 limit 3437500");
		break;
	}
	/* A local route, as iproute2 makes one. */
	CHECK_INT(topo_load(TUNBED_TOPO_DIR "/tunnels.topo", t, &err), 0);
	CHECK_INT(topo_plan_build(t, &plan), 0);
	buf[0] = '\0';
	for (int i = 0; i < plan.nsteps; i++) {
		if (plan.steps[i].kind == TOPO_STEP_ROUTE && plan.steps[i].index == 0)
			topo_step_describe(t, "p", &plan.steps[i], buf, sizeof(buf));
	}
	CHECK_STR(buf, "ip -n p-client route add local 198.18.64.0/18 dev lo");
}

int main(void)
{
	t = calloc(1, sizeof(*t));
	test_good();
	test_defaults();
	run_bad(bad_rows, sizeof(bad_rows) / sizeof(bad_rows[0]));
	test_limits();
	test_load();
	test_plan();
	free(t);
	return check_done("test_topo_parse");
}
