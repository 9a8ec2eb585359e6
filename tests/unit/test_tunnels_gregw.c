/*
 * Unit tests for gregw's packet path with a tunnel table (gateway/encap.c with tunnels.h):
 * a tunnel's outer headers, and decapsulation by outer source and key with its tunnel's
 * flags and prefixes, in rows; and for the control thread's side (gateway/tunctl.c): the
 * tunnels, add, replace and remove commands, each refusal changing nothing, a replace keeping
 * the tunnel's counters, a change answered only once in effect (a worker's pass that holds the
 * table before it holds the reply back, an error after TUNCTL_WAIT_MS naming the worker), and
 * changes kept while a worker's pass holds the tables: made in the order they came once it
 * ends, or refused after TUNCTL_WAIT_MS.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "byteorder.h"
#include "check.h"
#include "encap_prefix.h"
#include "config.h"
#include "encap.h"
#include "netaddr.h"
#include "pkt.h"
#include "tunctl.h"
#include "tunfile.h"
#include "tunnels_pub.h"
#include "tx_tap.h"

/* gwb's tunnels, as a tunnel file would give them: three from gwa, one from another peer. */
static const char gwb_file[] =
	"[tunnel a]\npeer = 198.18.0.1\nkey = 1\nprefixes = 198.18.64.0/32\n"
	"[tunnel b]\npeer = 198.18.0.1\nkey = 2\nseq = yes\n"
	"prefixes = 198.18.64.1/32\n"
	"[tunnel c]\npeer = 198.18.0.1\nprefixes = 198.18.65.0/24\n"
	"[tunnel d]\npeer = 198.18.0.9\nkey = 1\nprefixes = 198.18.66.0/24\n";

/* An outer config: local, the one remote, the sources allowed beside the tunnels' (the
 * tunnel subnet, and as --allow-from would, a pool that holds the tunnels' prefixes). */
static void cfg_init(struct encap_cfg *c, const char *local, const char *remote, unsigned flags)
{
	struct encap_prefix allow[] = { prefix("198.19.0.0/24"), prefix("198.18.64.0/18") },
			    own[] = { prefix("198.19.0.2/32") };

	memset(c, 0, sizeof(*c));
	c->family = AF_INET;
	inet_pton(AF_INET, local, c->local);
	inet_pton(AF_INET, remote, c->remote);
	c->gre_flags = flags;
	c->ttl = 64;
	tos_cfg_init(&c->tos);
	c->mtu = 1400;
	c->tunnel_sources = true;
	encap_sources(c, allow, 2, own, 1);
	encap_cfg_finish(c);
}

/* A tunnel as the sender has it (its own table's entry). */
static struct tunnel sender(unsigned flags, uint32_t key)
{
	struct tunnel t = { .family = AF_INET, .gre_flags = flags, .key = key };

	inet_pton(AF_INET, "198.18.0.2", t.peer);
	return t;
}

struct decap_row {
	const char *name;
	const char *outer_src; /* the sender's address */
	unsigned flags;	       /* the sender's GRE flags */
	uint32_t key;
	const char *src; /* inner source */
	enum drop_reason want;
	const char *tunnel; /* the tunnel r.tn names, NULL: none */
};

static const struct decap_row decap_rows[] = {
	{ "tunnel a by its key", "198.18.0.1", GRE_F_KEY, 1, "198.18.64.0", DROP_NONE, "a" },
	{ "tunnel b, with its sequence numbers", "198.18.0.1", GRE_F_KEY | GRE_F_SEQ, 2,
	  "198.18.64.1", DROP_NONE, "b" },
	{ "tunnel b without them: its drop", "198.18.0.1", GRE_F_KEY, 2, "198.18.64.1", DROP_NO_SEQ,
	  "b" },
	{ "a key no tunnel of the peer has", "198.18.0.1", GRE_F_KEY, 3, "198.18.64.0",
	  DROP_BAD_KEY, NULL },
	{ "no key: the peer's keyless tunnel c", "198.18.0.1", 0, 0, "198.18.65.7", DROP_NONE,
	  "c" },
	{ "another tunnel's prefix from a", "198.18.0.1", GRE_F_KEY, 1, "198.18.64.1",
	  DROP_SPOOFED_SOURCE, "a" },
	{ "c's prefix from a", "198.18.0.1", GRE_F_KEY, 1, "198.18.65.9", DROP_SPOOFED_SOURCE,
	  "a" },
	{ "a's prefix from c", "198.18.0.1", 0, 0, "198.18.64.0", DROP_SPOOFED_SOURCE, "c" },
	{ "the tunnel subnet, no tunnel's: allowed", "198.18.0.1", GRE_F_KEY, 1, "198.19.0.5",
	  DROP_NONE, "a" },
	{ "our own address in the subnet", "198.18.0.1", GRE_F_KEY, 1, "198.19.0.2",
	  DROP_SPOOFED_SOURCE, "a" },
	{ "allowed, no tunnel's", "198.18.0.1", GRE_F_KEY, 1, "198.18.99.1", DROP_NONE, "a" },
	{ "nobody's source", "198.18.0.1", GRE_F_KEY, 1, "198.18.150.1", DROP_SPOOFED_SOURCE, "a" },
	{ "a source no tunnel has", "198.18.0.7", GRE_F_KEY, 1, "198.18.64.0", DROP_UNKNOWN_PEER,
	  NULL },
	{ "the other peer's tunnel d, key 1 as a's", "198.18.0.9", GRE_F_KEY, 1, "198.18.66.1",
	  DROP_NONE, "d" },
	{ "d's peer with a's prefix", "198.18.0.9", GRE_F_KEY, 1, "198.18.64.0",
	  DROP_SPOOFED_SOURCE, "d" },
};

static void test_decap(void)
{
	struct tunfile f;
	struct line_error err;
	struct tunnels *t = NULL;
	struct encap_cfg rx;

	printf("case: decapsulation by outer source and key\n");
	CHECK_INT(tunfile_parse(gwb_file, sizeof(gwb_file) - 1, false, &f, &err), 0);
	CHECK_INT(tunnels_build(f.specs, f.n, NULL, &t), 0);
	cfg_init(&rx, "198.18.0.2", "198.18.0.1", GRE_F_KEY | GRE_F_SEQ);
	for (size_t i = 0; t && i < sizeof(decap_rows) / sizeof(decap_rows[0]); i++) {
		const struct decap_row *r = &decap_rows[i];
		struct pkt_spec s = { .family = AF_INET,
				      .src = r->src,
				      .dst = "198.18.128.0",
				      .proto = IPPROTO_UDP,
				      .sport = 9,
				      .dport = 9,
				      .payload = 64 };
		uint8_t buf[ENCAP_HEADROOM + 512] = { 0 }, *inner = buf + ENCAP_HEADROOM, *o;
		struct tunnel tn = sender(r->flags, r->key);
		struct encap_cfg tx;
		struct decap_result res;
		size_t len = pkt_build(&s, inner);
		unsigned hlen;
		enum drop_reason got;

		cfg_init(&tx, r->outer_src, "198.18.0.2", 0);
		hlen = encap_outer_hlen(&tx, &tn);
		o = encap_build(&tx, &tn, inner, len, 7);
		got = decap(&rx, t, o, hlen + len, hlen + len, &res);
		CHECK_ROW(got == r->want, r->name);
		CHECK_ROW(r->tunnel ? res.tn && strcmp(res.tn->name, r->tunnel) == 0 : !res.tn,
			  r->name);
		if (got != r->want)
			fprintf(stderr, "  got %s, want %s\n", drop_name(got), drop_name(r->want));
		/* The same GRE from a GRE-in-UDP socket, which takes datagrams from any source:
		 * the datagram's source decides as the outer header's did. */
		rx.udp = true;
		got = decap_gre(&rx, t, tx.local, o + IPV4_HLEN, hlen - IPV4_HLEN + len, &res);
		rx.udp = false;
		CHECK_ROW(got == r->want, r->name);
		CHECK_ROW(r->tunnel ? res.tn && strcmp(res.tn->name, r->tunnel) == 0 : !res.tn,
			  r->name);
	}
	tunnels_free(t);
	tunfile_free(&f);
}

/* A tunnel's outer headers: its peer, its key, its own GRE options and length. */
static void test_encap(void)
{
	uint8_t buf[ENCAP_HEADROOM + 512] = { 0 }, *inner = buf + ENCAP_HEADROOM, *o;
	struct pkt_spec s = { .family = AF_INET,
			      .src = "198.18.64.0",
			      .dst = "198.18.128.0",
			      .proto = IPPROTO_UDP,
			      .payload = 32 };
	struct tunnel plain = sender(0, 0), keyed = sender(GRE_F_KEY | GRE_F_SEQ, 0x01020304);
	struct encap_cfg c;
	struct gre_info g;
	size_t len = pkt_build(&s, inner);

	printf("case: a tunnel's outer headers\n");
	/* The configuration's own flags are the widest (the MTU's room): a tunnel has its own. */
	cfg_init(&c, "198.18.0.1", "198.18.0.2", GRE_F_KEY | GRE_F_SEQ | GRE_F_CSUM);
	inet_pton(AF_INET, "198.18.0.5", plain.peer);
	CHECK_INT(encap_outer_hlen(&c, NULL), 20 + 16);
	CHECK_INT(encap_outer_hlen(&c, &plain), 20 + 4);
	CHECK_INT(encap_outer_hlen(&c, &keyed), 20 + 12);
	o = encap_build(&c, &plain, inner, len, 99);
	CHECK(o == inner - 24);
	CHECK_INT(load_be32(o + IPV4_DST_OFF), 0xc6120005); /* the tunnel's peer */
	CHECK_INT(load_be32(o + IPV4_SRC_OFF), 0xc6120001);
	CHECK_INT(inet_csum(o, IPV4_HLEN), 0);
	CHECK_INT(gre_parse(o + 20, 4 + len, &g), 4);
	CHECK_INT(g.flags, 0);
	o = encap_build(&c, &keyed, inner, len, 99);
	CHECK(o == inner - 32);
	CHECK_INT(load_be32(o + IPV4_DST_OFF), 0xc6120002);
	CHECK_INT(load_be16(o + IPV4_TOT_LEN_OFF), 32 + len);
	CHECK_INT(gre_parse(o + 20, 12 + len, &g), 12);
	CHECK_INT(g.flags, GRE_F_KEY | GRE_F_SEQ);
	CHECK_INT(g.key, 0x01020304);
	CHECK_INT(g.seq, 99);
	CHECK_INT(g.proto, GRE_PROTO_IPV4);
}

/* gwa's file: four tunnels to gwb, none with sequence numbers or checksums. */
static const char gwa_file[] =
	"[tunnel t0]\npeer = 198.18.0.2\nkey = 1\nprefixes = 198.18.128.0/32\n"
	"[tunnel t1]\npeer = 198.18.0.2\nkey = 2\nprefixes = 198.18.128.1/32\n"
	"[tunnel t2]\npeer = 198.18.0.2\nkey = 3\nprefixes = 198.18.128.2/32\n"
	"[tunnel t3]\npeer = 198.18.0.2\nkey = 4\nprefixes = 198.18.128.3/32, 2001:2:0:8003::/64\n";

/* The control socket's clock, and the id of its last client. */
static uint64_t now_ns = 1000000000;
static uint64_t last_id;

/* The reply to line as the control socket gives it: its text, whether it was the tunnels',
 * and whether it comes later ("(later)": tunctl_retry gives it under last_id). */
static const char *ask(struct tunctl *t, const char *line, char *out, size_t size)
{
	bool handled, later;
	json_t *doc = tunctl_command(t, line, strlen(line), ++last_id, now_ns, &handled, &later);
	char *s;

	snprintf(out, size, "%s", later ? "(later)" : handled ? "" : "(not handled)");
	if (doc) {
		s = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
		snprintf(out, size, "%s", s ? s : "?");
		free(s);
		json_decref(doc);
	}
	return out;
}

static bool starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The replies tunctl_retry gave, in order: at most a held reply for each table a pass can
 * hold back, and the kept changes. */
enum { LATER_MAX = TUNNELS_RETIRED_MAX + TUNCTL_WAIT_MAX + 1 };

struct later_log {
	unsigned n;
	uint64_t id[LATER_MAX];
	char reply[LATER_MAX][256];
};

static void later_reply(void *arg, uint64_t id, json_t *reply)
{
	struct later_log *l = arg;
	char *s = reply ? json_dumps(reply, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;

	if (l->n < LATER_MAX) {
		l->id[l->n] = id;
		snprintf(l->reply[l->n], sizeof(l->reply[0]), "%s", s ? s : "(none)");
		l->n++;
	}
	free(s);
	json_decref(reply);
}

/* Publishes TUNNELS_RETIRED_MAX replaces of tunnel a0 while a worker is in a pass (which then
 * holds them all): each made, its reply held until the pass ends, and a change after them
 * must wait for the pass to end before it is made. */
static void fill_retired(struct tunctl *t, unsigned key)
{
	char line[128], out[512];

	for (unsigned i = 0; i < TUNNELS_RETIRED_MAX; i++) {
		uint64_t gen = tunnels_gen(tunnels_pub_current(t->pub));

		snprintf(line, sizeof(line),
			 "replace a0 peer = 198.18.0.2; key = %u; prefixes = 198.18.210.0/24",
			 key + i);
		CHECK_STR(ask(t, line, out, sizeof(out)), "(later)");
		CHECK_U64(tunnels_gen(tunnels_pub_current(t->pub)), gen + 1); /* made */
	}
}

struct cmd_row {
	const char *line;
	const char *want; /* the reply starts so */
	unsigned count;	  /* tunnels after it */
};

static const struct cmd_row cmd_rows[] = {
	{ "stats", "(not handled)", 4 },
	{ "tunnelsx", "(not handled)", 4 },
	{ "tunnels 1 2",
	  "{\"tunnels\":4,\"gen\":2,\"from\":1,\"list\":[{\"name\":\"t1\",\"peer\":\"198.18.0.2\","
	  "\"key\":true,\"seq\":false,\"csum\":false,\"tap\":false,\"prefixes\":[\"198.18.128.1/"
	  "32\"],"
	  "\"tx_packets\":0",
	  4 },
	{ "tunnels x", "{\"error\":\"bad arguments 'x' for tunnels", 4 },
	{ "tunnels 0 1025", "{\"error\":\"bad arguments", 4 },
	{ "tunnels 0 1 2", "{\"error\":\"bad arguments", 4 },
	{ "add n1 peer = 198.18.0.2; key = 9; prefixes = 198.18.200.0/24",
	  "{\"changed\":\"add\",\"tunnel\":\"n1\",\"tunnels\":5,\"gen\":3}", 5 },
	{ "add n1 peer = 198.18.0.2; key = 19; prefixes = 198.18.203.0/24",
	  "{\"error\":\"duplicate tunnel 'n1'", 5 },
	{ "add n2 peer = 2001:2::2; key = 10; prefixes = 198.18.201.0/24",
	  "{\"error\":\"tunnel 'n2': peer 2001:2::2: gregw's tunnels are of one outer family, "
	  "198.18.0.2's (for now)\"}",
	  5 },
	{ "add m2 peer = 198.18.0.3; key = 1; prefixes = 198.18.201.0/24",
	  "{\"changed\":\"add\",\"tunnel\":\"m2\",\"tunnels\":6,\"gen\":4}", 6 },
	{ "remove m2", "{\"changed\":\"remove\",\"tunnel\":\"m2\",\"tunnels\":5,\"gen\":5}", 5 },
	{ "add n3 peer = 198.18.0.2; key = 1; prefixes = 198.18.201.0/24",
	  "{\"error\":\"tunnel 'n3': peer 198.18.0.2 key 1 is tunnel 't0''s already", 5 },
	{ "add n4 peer = 198.18.0.2; key = 10; prefixes = 198.18.128.0/32",
	  "{\"error\":\"tunnel 'n4': prefix 198.18.128.0/32 is tunnel 't0''s already", 5 },
	{ "add n5 peer = 198.18.0.2; key = 11; seq = yes; prefixes = 198.18.201.0/24",
	  "{\"error\":\"tunnel 'n5': its GRE header of 12 bytes does not fit the tunnel MTU, made "
	  "for 8",
	  5 },
	{ "add n6 peer = 198.18.0.2; key = 12; encap = gre-udp; prefixes = 198.18.201.0/24",
	  "{\"error\":\"tunnel 'n6': encap gre-udp: gregw's tunnels are all gre\"}", 5 },
	{ "add n7 peer = 198.18.0.2; key = 13; prefixes = 10.1.0.0/16",
	  "{\"error\":\"tunnel 'n7', key 3: prefix 10.1.0.0/16 is outside the benchmarking ranges",
	  5 },
	{ "add n8 peer = 198.18.0.2; key = 14; bogus = 1; prefixes = 198.18.201.0/24",
	  "{\"error\":\"tunnel 'n8', key 3: unknown key 'bogus'", 5 },
	{ "add bad/name peer = 198.18.0.2; key = 15; prefixes = 198.18.201.0/24",
	  "{\"error\":\"bad tunnel name 'bad/name'", 5 },
	{ "add", "{\"error\":\"add: expected a tunnel's name\"}", 5 },
	{ "add n9 peer = 198.18.0.2; key = \xea"
	  "1; prefixes = 198.18.201.0/24",
	  "{\"error\":\"tunnel 'n9', key 2: bad value '\\\\xea1' for key", 5 },
	{ "replace n9 peer = 198.18.0.2; key = 16; prefixes = 198.18.201.0/24",
	  "{\"error\":\"no tunnel 'n9'", 5 },
	{ "replace n1 peer = 198.18.0.2; key = 9; prefixes = 198.18.202.0/24",
	  "{\"changed\":\"replace\",\"tunnel\":\"n1\",\"tunnels\":5,\"gen\":6}", 5 },
	{ "remove n1 now", "{\"error\":\"remove: unexpected 'now' after the name\"}", 5 },
	{ "remove n1", "{\"changed\":\"remove\",\"tunnel\":\"n1\",\"tunnels\":4,\"gen\":7}", 4 },
	{ "remove n1", "{\"error\":\"no tunnel 'n1'", 4 },
	{ "remove t1", "{\"changed\":\"remove\",\"tunnel\":\"t1\",\"tunnels\":3,\"gen\":8}", 3 },
	{ "tunnels", "{\"tunnels\":3,\"gen\":8,\"from\":0,\"list\":[{\"name\":\"t0\"", 3 },
};

/* The publication's empty table is generation 1, the file's 2, each change one more. */
static void tunctl_setup(struct tunctl *t, struct tunnels_pub *pub, struct config *c)
{
	struct line_error err;

	config_defaults(c);
	snprintf(c->tunnels, sizeof(c->tunnels), "gwa.tunnels");
	CHECK_INT(tunfile_parse(gwa_file, sizeof(gwa_file) - 1, false, &c->tf, &err), 0);
	inet_pton(AF_INET, "198.18.0.2", c->remote.bytes);
	c->remote.family = AF_INET;
	CHECK_INT(tunctl_init(t, c), 0);
	CHECK_INT(tunnels_pub_init(pub, 1), 0);
	CHECK_INT(tunctl_publish(t, pub), 0);
}

static void test_commands(void)
{
	static struct tunnels_pub pub;
	struct tunctl t;
	struct config c;
	char out[2048];
	const struct tunnel *tn;
	uint32_t slot = TUNNELS_NONE;

	printf("case: the control socket's tunnel commands\n");
	tunctl_setup(&t, &pub, &c);
	for (size_t i = 0; i < sizeof(cmd_rows) / sizeof(cmd_rows[0]); i++) {
		const struct cmd_row *r = &cmd_rows[i];

		if (strcmp(r->line, "replace n1 peer = 198.18.0.2; key = 9; prefixes = "
				    "198.18.202.0/24") == 0) {
			/* Counters of n1 before its replace: they go on after it. */
			tn = tunnels_at(tunnels_pub_current(&pub),
					tunnels_find(tunnels_pub_current(&pub), "n1"));
			slot = tn->slot;
			tunnels_stat_add(tunnels_stats(&pub, 0, tn), TUNNEL_TX_PACKETS, 5);
		}
		ask(&t, r->line, out, sizeof(out));
		CHECK_ROW(strncmp(out, r->want, strlen(r->want)) == 0, r->line);
		if (strncmp(out, r->want, strlen(r->want)) != 0)
			fprintf(stderr, "  got %s\n  want %s\n", out, r->want);
		CHECK_ROW(t.n == r->count && tunnels_count(tunnels_pub_current(&pub)) == r->count,
			  r->line);
		if (strncmp(r->line, "replace n1 ", 11) == 0 && strstr(out, "changed")) {
			struct tunnel_stats sum;

			tn = tunnels_at(tunnels_pub_current(&pub),
					tunnels_find(tunnels_pub_current(&pub), "n1"));
			CHECK_INT(tn->slot, slot);
			tunnels_pub_stats(&pub, tn->slot, &sum);
			CHECK_U64(sum.ctr[TUNNEL_TX_PACKETS], 5);
		}
	}
	/* A change cut short by the line's limit is refused, not read as another tunnel. */
	{
		char longline[CTL_CMD_MAX + 1];
		int n = snprintf(
			longline, sizeof(longline),
			"add long peer = 198.18.0.2; key = 40; prefixes = 198.18.220.0/24; ");

		memset(longline + n, ' ', sizeof(longline) - 1 - (size_t)n);
		longline[CTL_CMD_MAX] = '\0';
		CHECK_STR(ask(&t, longline, out, sizeof(out)),
			  "{\"error\":\"line too long: at most 1023 bytes\"}");
		longline[CTL_CMD_MAX - 1] = '\0';
		CHECK(strstr(ask(&t, longline, out, sizeof(out)), "\"changed\":\"add\"") != NULL);
		ask(&t, "remove long", out, sizeof(out));
	}
	/* The list stays sorted by name, as the table is: a page of each names the same. */
	ask(&t, "add a0 peer = 198.18.0.2; key = 20; prefixes = 198.18.210.0/24", out, sizeof(out));
	CHECK_STR(t.specs[0].name, "a0");
	CHECK_STR(tunnels_at(tunnels_pub_current(&pub), 0)->name, "a0");
	CHECK(strstr(ask(&t, "tunnels 0 1", out, sizeof(out)), "\"name\":\"a0\"") != NULL);
	CHECK(strstr(out, "\"next\":1}") != NULL);

	/* With the TAP in use the listing says which tunnels it takes (tx_tap_takes): the first
	 * peer's, without sequence numbers or checksums. */
	{
		uint8_t first[4] = { 198, 18, 0, 2 }, other[4] = { 198, 18, 0, 3 };

		CHECK(tx_tap_takes(GRE_F_KEY, AF_INET, first, first));
		CHECK(tx_tap_takes(0, AF_INET, first, first));
		CHECK(!tx_tap_takes(GRE_F_KEY | GRE_F_SEQ, AF_INET, first, first));
		CHECK(!tx_tap_takes(GRE_F_CSUM, AF_INET, first, first));
		CHECK(!tx_tap_takes(GRE_F_KEY, AF_INET, other, first));
		t.tap = true;
		CHECK(strstr(ask(&t, "tunnels 0 1", out, sizeof(out)), "\"tap\":true") != NULL);
		ask(&t, "add m3 peer = 198.18.0.3; key = 1; prefixes = 198.18.211.0/24", out,
		    sizeof(out));
		CHECK(strstr(ask(&t, "tunnels 1 1", out, sizeof(out)), "\"name\":\"m3\"") != NULL);
		CHECK(strstr(out, "\"tap\":false") != NULL);
		ask(&t, "remove m3", out, sizeof(out));
		t.tap = false;
	}

	/* A change is answered once in effect: at once while no worker is in a pass; while one
	 * is, after the pass ends (its next pass takes the new table), and before that only
	 * from the table, which has it already. */
	{
		static struct later_log log;
		uint64_t id_b, id_rm, gen;

		CHECK(strstr(ask(&t,
				 "add b0 peer = 198.18.0.2; key = 21; prefixes = 198.18.214.0/24",
				 out, sizeof(out)),
			     "\"changed\":\"add\"") != NULL);
		(void)tunnels_enter(&pub, 0);
		CHECK_STR(ask(&t,
			      "replace b0 peer = 198.18.0.2; key = 22; prefixes = 198.18.214.0/24",
			      out, sizeof(out)),
			  "(later)");
		id_b = last_id;
		gen = tunnels_gen(tunnels_pub_current(&pub));
		CHECK_INT(tunnels_at(tunnels_pub_current(&pub),
				     tunnels_find(tunnels_pub_current(&pub), "b0"))
				  ->key,
			  22);
		CHECK_U64(tunnels_pub_settled(&pub), gen - 1);
		CHECK_INT(tunnels_pub_holder(&pub), 0);
		CHECK(strstr(ask(&t, "tunnels 0 1", out, sizeof(out)), "\"name\":\"a0\"") !=
		      NULL); /* the listing answers at once */
		CHECK_INT(tunctl_retry(&t, now_ns, later_reply, &log), 1);
		CHECK_INT(log.n, 0);
		tunnels_leave(&pub, 0);
		CHECK_U64(tunnels_pub_settled(&pub), gen);
		CHECK_INT(tunnels_pub_holder(&pub), -1);
		CHECK_INT(tunctl_retry(&t, now_ns, later_reply, &log), 0);
		CHECK_INT(log.n, 1);
		CHECK(log.id[0] == id_b);
		CHECK(starts(log.reply[0], "{\"changed\":\"replace\",\"tunnel\":\"b0\""));

		/* A pass that never ends: the reply says the change was made, and which worker
		 * has not left its pass, after TUNCTL_WAIT_MS; the change stays made. */
		log.n = 0;
		(void)tunnels_enter(&pub, 0);
		CHECK_STR(ask(&t, "remove b0", out, sizeof(out)), "(later)");
		id_rm = last_id;
		CHECK_INT(t.n, 4);
		CHECK_INT(tunctl_retry(&t, now_ns + (uint64_t)TUNCTL_WAIT_MS * 1000000 - 1,
				       later_reply, &log),
			  1);
		CHECK_INT(tunctl_retry(&t, now_ns + (uint64_t)TUNCTL_WAIT_MS * 1000000, later_reply,
				       &log),
			  0);
		CHECK_INT(log.n, 1);
		CHECK(log.id[0] == id_rm);
		CHECK(starts(log.reply[0], "{\"error\":\"tunnel 'b0' removed (gen "));
		CHECK(strstr(log.reply[0],
			     "), but not known to be in effect: worker 0 has not left "
			     "its pass in 1000 ms\",\"changed\":\"remove\","
			     "\"tunnel\":\"b0\",\"tunnels\":4,") != NULL);
		CHECK_INT(tunnels_find(tunnels_pub_current(&pub), "b0"), TUNNELS_NONE);
		tunnels_leave(&pub, 0);
		CHECK_INT(tunctl_retry(&t, now_ns, later_reply, &log), 0);
		CHECK_INT(log.n, 1);
		CHECK(strstr(ask(&t, "tunnels 0 1", out, sizeof(out)), "\"tunnels\":4") != NULL);
		CHECK(t.effect_waits >= 2);
	}

	/* A worker in a pass holds the tables published since it began: once TUNNELS_RETIRED_MAX
	 * wait, their replies held, a change is kept, its reply later, and so are the changes
	 * after it, in their order; the listing answers at once. Once the pass ends, the held
	 * replies are given and the kept changes made in that order, each checked against the
	 * tunnels it then meets. */
	{
		static struct later_log log;
		uint64_t id_z, id_rm, id_z2;
		const unsigned R = TUNNELS_RETIRED_MAX;

		(void)tunnels_enter(&pub, 0);
		fill_retired(&t, 30);
		CHECK_STR(ask(&t, "add z peer = 198.18.0.2; key = 99; prefixes = 198.18.211.0/24",
			      out, sizeof(out)),
			  "(later)");
		id_z = last_id;
		CHECK_STR(ask(&t, "remove a0", out, sizeof(out)), "(later)");
		id_rm = last_id;
		CHECK_STR(ask(&t, "add z2 peer = 198.18.0.2; key = 98; prefixes = 198.18.211.0/24",
			      out, sizeof(out)),
			  "(later)");
		id_z2 = last_id;
		CHECK(strstr(ask(&t, "add bad/name peer = 198.18.0.2", out, sizeof(out)),
			     "bad tunnel name") != NULL); /* a bad line is answered at once */
		CHECK(strstr(ask(&t, "tunnels 0 1", out, sizeof(out)), "\"tunnels\":4") != NULL);
		CHECK_INT(tunctl_retry(&t, now_ns, later_reply, &log), R + 3);
		CHECK_INT(log.n, 0);
		CHECK_INT(t.n, 4);
		CHECK(t.effect_waits >= 2 + R);
		tunnels_leave(&pub, 0);
		CHECK_INT(tunctl_retry(&t, now_ns, later_reply, &log), 0);
		CHECK_INT(log.n, R + 3);
		for (unsigned i = 0; i < R; i++)
			CHECK_ROW(
				starts(log.reply[i], "{\"changed\":\"replace\",\"tunnel\":\"a0\""),
				log.reply[i]);
		CHECK(log.id[R] == id_z && log.id[R + 1] == id_rm && log.id[R + 2] == id_z2);
		CHECK(starts(log.reply[R], "{\"changed\":\"add\",\"tunnel\":\"z\",\"tunnels\":5"));
		CHECK(starts(log.reply[R + 1],
			     "{\"changed\":\"remove\",\"tunnel\":\"a0\",\"tunnels\":4"));
		CHECK(strstr(log.reply[R + 2], "prefix 198.18.211.0/24 is tunnel 'z''s already") !=
		      NULL);
		CHECK_INT(t.n, 4);
		ask(&t, "add a0 peer = 198.18.0.2; key = 20; prefixes = 198.18.210.0/24", out,
		    sizeof(out));
		CHECK(strstr(out, "\"changed\":\"add\"") != NULL); /* made at once again */

		/* Kept TUNCTL_WAIT_MS in vain: refused, nothing changed; the replaces made before
		 * it answered with the error of a change not known to be in effect. */
		log.n = 0;
		(void)tunnels_enter(&pub, 0);
		fill_retired(&t, 40);
		CHECK_STR(ask(&t, "add w peer = 198.18.0.2; key = 97; prefixes = 198.18.212.0/24",
			      out, sizeof(out)),
			  "(later)");
		CHECK_INT(tunctl_retry(&t, now_ns + (uint64_t)TUNCTL_WAIT_MS * 1000000 - 1,
				       later_reply, &log),
			  R + 1);
		CHECK_INT(tunctl_retry(&t, now_ns + (uint64_t)TUNCTL_WAIT_MS * 1000000, later_reply,
				       &log),
			  0);
		CHECK_INT(log.n, R + 1);
		for (unsigned i = 0; i < R; i++)
			CHECK_ROW(strstr(log.reply[i], "not known to be in effect: worker 0") !=
					  NULL,
				  log.reply[i]);
		CHECK(strstr(log.reply[R], "tunnel 'w' not changed: Device or resource busy") !=
		      NULL);
		CHECK(t.busy_retries > 0);
		CHECK_INT(t.n, 5);

		/* At most TUNCTL_WAIT_MAX wait: one more is refused at once. */
		log.n = 0;
		for (unsigned i = 0; i <= TUNCTL_WAIT_MAX; i++) {
			char line[128];

			snprintf(line, sizeof(line),
				 "add m%u peer = 198.18.0.2; key = %u; prefixes = 198.18.213.%u/32",
				 i, 300 + i, i);
			ask(&t, line, out, sizeof(out));
			if (i < TUNCTL_WAIT_MAX)
				CHECK_ROW(strcmp(out, "(later)") == 0, line);
			else
				CHECK(strstr(out, "not changed: Device or resource busy") != NULL);
		}
		tunnels_leave(&pub, 0);
		CHECK_INT(tunctl_retry(&t, now_ns, later_reply, &log), 0);
		CHECK_INT(log.n, TUNCTL_WAIT_MAX);
		for (unsigned i = 0; i < log.n; i++)
			CHECK_ROW(strstr(log.reply[i], "\"changed\":\"add\"") != NULL,
				  log.reply[i]);
		CHECK_INT(t.n, 5 + TUNCTL_WAIT_MAX);
	}
	tunctl_fini(&t);
	tunnels_pub_fini(&pub);
	config_fini(&c);

	/* The one tunnel of --remote: every destination, and no change. */
	config_defaults(&c);
	inet_pton(AF_INET, "198.18.0.2", c.remote.bytes);
	c.remote.family = AF_INET;
	c.has_key = true;
	c.key = 5;
	CHECK_INT(tunctl_init(&t, &c), 0);
	CHECK_INT(tunnels_pub_init(&pub, 1), 0);
	CHECK_INT(tunctl_publish(&t, &pub), 0);
	{
		static const uint8_t any4[4] = { 203, 0, 113, 9 }, any6[16] = { 0xfe, 0x80 };
		const struct tunnels *tab = tunnels_pub_current(&pub);

		CHECK_INT(tunnels_encap(tab, AF_INET, any4), 0);
		CHECK_INT(tunnels_encap(tab, AF_INET6, any6), 0);
		CHECK_STR(tunnels_at(tab, 0)->name, "remote");
		CHECK_INT(tunnels_at(tab, 0)->gre_flags, GRE_F_KEY);
		CHECK_INT(tunnels_at(tab, 0)->key, 5);
	}
	CHECK(strstr(ask(&t, "add x peer = 198.18.0.2; key = 1; prefixes = 198.18.201.0/24", out,
			 sizeof(out)),
		     "its one tunnel is fixed") != NULL);
	CHECK_INT(t.n, 1);
	tunctl_fini(&t);
	tunnels_pub_fini(&pub);
}

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/*
 * Random changes through the control socket, each refused with the words, or made, as
 * tunfile_check_change over the whole list says: the check against the few tunnels the table
 * finds (the table without nested prefixes) gives the same first broken rule as the whole
 * list's. Names, peers, keys and prefixes are drawn from small sets, so that every rule is met.
 */
static void test_random_changes(void)
{
	enum { CHANGES = 3000 };
	static struct tunnels_pub pub;
	struct tunctl t;
	struct config c;
	char out[2048];
	unsigned made = 0, refused = 0, wrong = 0, nested = 0;

	printf("case: random changes, refused or made as the whole list's check says\n");
	tunctl_setup(&t, &pub, &c);
	for (unsigned i = 0; i < CHANGES; i++) {
		static const char *const verbs[] = { "add", "replace", "remove" };
		const char *verb = verbs[rnd() % 3];
		enum tunfile_change ch = verb[0] == 'a'	  ? TUNFILE_ADD
					 : verb[2] == 'p' ? TUNFILE_REPLACE
							  : TUNFILE_REMOVE;
		char name[8], keys[256] = "", line[400];
		struct tunnel_spec x = { 0 };
		struct line_error err;
		unsigned np = 1 + (unsigned)(rnd() % 2);
		int want;
		json_t *doc;

		snprintf(name, sizeof(name), "%c%u", rnd() % 4 ? 'r' : 't', (unsigned)(rnd() % 12));
		snprintf(keys, sizeof(keys), "peer = 198.18.0.%u\n", 2 + (unsigned)(rnd() % 2));
		if (rnd() % 4)
			snprintf(keys + strlen(keys), sizeof(keys) - strlen(keys), "key = %u\n",
				 (unsigned)(rnd() % 6));
		for (unsigned j = 0; j < np; j++) {
			unsigned cell = (unsigned)(rnd() % 16);

			if (rnd() % 30 == 0)
				snprintf(keys + strlen(keys), sizeof(keys) - strlen(keys),
					 "prefixes = 198.18.201.0/24\n");
			else if (rnd() % 2)
				snprintf(keys + strlen(keys), sizeof(keys) - strlen(keys),
					 "prefixes = 198.18.201.%u/30\n", cell * 4);
			else
				snprintf(keys + strlen(keys), sizeof(keys) - strlen(keys),
					 "prefixes = 2001:2:0:c9%02x::/64\n", cell);
		}
		if (ch == TUNFILE_REMOVE) {
			snprintf(x.name, sizeof(x.name), "%s", name);
			snprintf(line, sizeof(line), "remove %s", name);
		} else {
			if (tunfile_parse_tunnel(name, keys, strlen(keys), false, &x, &err))
				continue; /* two of one prefix: the reader's refusal, not the table's */
			snprintf(line, sizeof(line), "%s %s %s", verb, name, keys);
			for (char *p = line; *p; p++) {
				if (*p == '\n')
					*p = ';';
			}
			line[strlen(line) - 1] = '\0';
		}
		nested += tunnels_nested(tunnels_pub_current(&pub));
		want = tunfile_check_change(t.specs, t.n, ch, &x, &err);
		ask(&t, line, out, sizeof(out));
		doc = json_loads(out, 0, NULL);
		if (want) {
			const char *e = json_string_value(json_object_get(doc, "error"));

			refused++;
			if (!e || strcmp(e, err.msg) != 0) {
				fprintf(stderr, "  %s: '%s', want '%s'\n", line, out, err.msg);
				wrong++;
			}
		} else {
			made++;
			if (!json_object_get(doc, "changed")) {
				fprintf(stderr, "  %s: '%s', want it made\n", line, out);
				wrong++;
			}
		}
		json_decref(doc);
		wrong += tunnels_count(tunnels_pub_current(&pub)) != t.n;
	}
	CHECK_INT(wrong, 0);
	/* Both verdicts, on tables with and without nested prefixes, in numbers. */
	CHECK(made > CHANGES / 10);
	CHECK(refused > CHANGES / 10);
	CHECK(nested > 10 && nested < CHANGES - 10);
	printf("  %u made, %u refused, %u against nested prefixes\n", made, refused, nested);
	tunctl_fini(&t);
	tunnels_pub_fini(&pub);
	tunfile_free(&c.tf);
}

int main(void)
{
	test_encap();
	test_decap();
	test_commands();
	test_random_changes();
	return check_done("test_tunnels_gregw");
}
