/*
 * The tunnel file (common/tunfile.h): a good file read into its tunnels; every refusal with
 * its exact line and words; one tunnel's keys as the control socket takes them; the checks of
 * a change (add, remove, replace); files that are not regular, and the line a refusal gets. With --bed DIR N it reads the
 * two files topo/tunnels.sh wrote for N tunnels and checks every tunnel's lookups both ways
 * on both gateways (unit/tunnels_bed).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "gre.h"
#include "parse.h"
#include "tunfile.h"
#include "tunnels.h"

static int parse(const char *text, bool any, struct tunfile *f, struct line_error *err)
{
	return tunfile_parse(text, strlen(text), any, f, err);
}

static void test_good(void)
{
	static const char text[] =
		"; gwa's tunnels\n"
		"[tunnel site-a]\n"
		"peer = 198.18.0.2\n"
		"key = 7\n"
		"prefixes = 198.18.128.0/24, 2001:2:0:8000::/64\n"
		"  prefixes = 198.18.129.0/25 ; a second line\n"
		"\n"
		"[ tunnel b ]   ; blanks and a comment\n"
		"peer = 2001:2::2\n"
		"prefixes = 198.18.130.0/24\n"
		"encap = gre-udp\n"
		"seq = yes\n"
		"csum = yes\n"
		"[tunnel c_3]\n"
		"peer = 198.18.0.2\n"
		"key = 4294967295\n"
		"prefixes = 198.18.128.0/25\n" /* inside site-a's: the longest wins */
		"seq = no\n"
		"encap = gre\n";
	struct tunfile f;
	struct line_error err;
	char buf[NETPREFIX_STRLEN];

	printf("case: a good file\n");
	CHECK_INT(parse(text, false, &f, &err), 0);
	CHECK_INT(f.n, 3);
	CHECK_STR(f.specs[0].name, "site-a");
	CHECK_INT(f.specs[0].gre_flags, GRE_F_KEY);
	CHECK_U64(f.specs[0].key, 7);
	CHECK(!f.specs[0].udp);
	CHECK_INT(f.specs[0].nprefixes, 3);
	CHECK_STR(netaddr_format_prefix(&f.specs[0].prefixes[1], buf), "2001:2:0:8000::/64");
	CHECK_STR(netaddr_format_prefix(&f.specs[0].prefixes[2], buf), "198.18.129.0/25");
	CHECK_INT(f.lines[0].section, 2);
	CHECK_INT(f.lines[0].peer, 3);
	CHECK_INT(f.lines[0].key, 4);
	CHECK_INT(f.lines[0].prefixes[1], 5);
	CHECK_INT(f.lines[0].prefixes[2], 6);
	CHECK_STR(f.specs[1].name, "b");
	CHECK_INT(f.specs[1].peer.family, AF_INET6);
	CHECK_INT(f.specs[1].gre_flags, GRE_F_SEQ | GRE_F_CSUM);
	CHECK(f.specs[1].udp);
	CHECK_INT(f.lines[1].key, 0);
	CHECK_U64(f.specs[2].key, 4294967295u);
	CHECK_INT(f.specs[2].gre_flags, GRE_F_KEY);
	tunfile_free(&f);

	printf("case: an empty file, and comments only: no tunnels\n");
	CHECK_INT(parse("", false, &f, &err), 0);
	CHECK_INT(f.n, 0);
	tunfile_free(&f);
	CHECK_INT(parse("; nothing\n# here\n\n", false, &f, &err), 0);
	CHECK_INT(f.n, 0);
	tunfile_free(&f);

	printf("case: --any-address allows a peer and prefixes outside the ranges\n");
	CHECK_INT(
		parse("[tunnel x]\npeer = 10.1.2.3\nprefixes = 10.9.0.0/16 ::/0\n", true, &f, &err),
		0);
	CHECK_INT(f.n, 1);
	tunfile_free(&f);
}

#define T(name, peer, rest) "[tunnel " name "]\npeer = " peer "\n" rest

static void test_refusals(void)
{
	static const struct {
		const char *row, *text;
		int line;
		const char *msg;
	} rows[] = {
		{ "same peer and key",
		  T("a", "198.18.0.2", "key = 7\nprefixes = 198.18.64.0/24\n")
			  T("b", "198.18.0.2", "prefixes = 198.18.65.0/24\nkey = 7\n"),
		  8,
		  "tunnel 'b': peer 198.18.0.2 key 7 is tunnel 'a''s already (line 3): a packet "
		  "could not tell them apart" },
		{ "same peer, both without a key",
		  T("a", "198.18.0.2", "prefixes = 198.18.64.0/24\n")
			  T("b", "198.18.0.2", "prefixes = 198.18.65.0/24\n"),
		  5,
		  "tunnel 'b': peer 198.18.0.2 without a key is tunnel 'a''s already (line 2): a "
		  "packet could not tell them apart" },
		{ "same IPv6 peer and key",
		  T("a", "2001:2::2", "key = 0\nprefixes = 198.18.64.0/24\n")
			  T("b", "2001:2:0::2", "key = 0\nprefixes = 198.18.65.0/24\n"),
		  7,
		  "tunnel 'b': peer 2001:2::2 key 0 is tunnel 'a''s already (line 3): a packet "
		  "could not tell them apart" },
		{ "one prefix on two tunnels",
		  T("a", "198.18.0.2", "key = 1\nprefixes = 198.18.64.0/24\n")
			  T("b", "198.18.0.2", "key = 2\nprefixes = 2001:2::/64 198.18.64.0/24\n"),
		  8, "tunnel 'b': prefix 198.18.64.0/24 is tunnel 'a''s already (line 4)" },
		{ "prefixes of one tunnel that overlap",
		  T("a", "198.18.0.2", "prefixes = 198.18.64.0/24\nprefixes = 198.18.64.128/25\n"),
		  4,
		  "tunnel 'a': prefix 198.18.64.128/25 overlaps its prefix 198.18.64.0/24 (line "
		  "3)" },
		{ "one prefix twice in a tunnel",
		  T("a", "198.18.0.2", "prefixes = 2001:2::/64, 2001:2::/64\n"), 3,
		  "tunnel 'a': prefix 2001:2::/64 overlaps its prefix 2001:2::/64 (line 3)" },
		{ "the earlier of two refusals",
		  T("a", "198.18.0.2", "key = 1\nprefixes = 198.18.64.0/24\n")
			  T("b", "198.18.0.2", "key = 2\nprefixes = 198.18.64.0/24\n")
				  T("c", "198.18.0.2", "key = 2\nprefixes = 198.18.66.0/24\n"),
		  8, "tunnel 'b': prefix 198.18.64.0/24 is tunnel 'a''s already (line 4)" },
		{ "peer outside the ranges", T("a", "10.1.2.3", "prefixes = 198.18.64.0/24\n"), 2,
		  "peer 10.1.2.3 is outside the benchmarking ranges 198.18.0.0/15 and 2001:2::/48 "
		  "(--any-address allows it)" },
		{ "prefix outside the ranges", T("a", "198.18.0.2", "prefixes = 198.16.0.0/14\n"),
		  3,
		  "prefix 198.16.0.0/14 is outside the benchmarking ranges 198.18.0.0/15 and "
		  "2001:2::/48 (--any-address allows it)" },
		{ "IPv6 prefix outside the ranges",
		  T("a", "198.18.0.2", "prefixes = 198.18.64.0/24 2001:2::/47\n"), 3,
		  "prefix 2001:2::/47 is outside the benchmarking ranges 198.18.0.0/15 and "
		  "2001:2::/48 (--any-address allows it)" },
		{ "key out of range", T("a", "198.18.0.2", "key = 4294967296\n"), 3,
		  "bad value '4294967296' for key: expected 0 to 4294967295" },
		{ "key negative", T("a", "198.18.0.2", "key = -1\n"), 3,
		  "bad value '-1' for key: expected 0 to 4294967295" },
		{ "key not a number", T("a", "198.18.0.2", "key = 0x10\n"), 3,
		  "bad value '0x10' for key: expected 0 to 4294967295" },
		{ "duplicate name",
		  T("a", "198.18.0.2", "key = 1\nprefixes = 198.18.64.0/24\n")
			  T("b", "198.18.0.2", "key = 2\nprefixes = 198.18.65.0/24\n")
				  T("a", "198.18.0.2", "key = 3\nprefixes = 198.18.66.0/24\n"),
		  9, "duplicate tunnel 'a' (line 1)" },
		{ "unknown key", T("a", "198.18.0.2", "remote = 198.18.0.3\n"), 3,
		  "unknown key 'remote' in tunnel 'a': expected peer, key, prefixes, encap, seq or "
		  "csum" },
		{ "duplicate key", T("a", "198.18.0.2", "key = 1\nseq = yes\nkey = 1\n"), 5,
		  "duplicate key 'key' in tunnel 'a' (first at line 3)" },
		{ "duplicate peer", T("a", "198.18.0.2", "peer = 198.18.0.2\n"), 3,
		  "duplicate key 'peer' in tunnel 'a' (first at line 2)" },
		{ "key before any section", "peer = 198.18.0.2\n[tunnel a]\n", 1,
		  "key 'peer' outside a [tunnel NAME] section" },
		{ "a section of another kind", "[host a]\n", 1,
		  "bad section header: expected [tunnel NAME]" },
		{ "a section without a name", "[tunnel]\n", 1,
		  "bad section header: expected [tunnel NAME]" },
		{ "a section of two names", "[tunnel a b]\n", 1,
		  "bad section header: expected [tunnel NAME]" },
		{ "a bad name", "[tunnel a/b]\n", 1,
		  "bad tunnel name 'a/b': use 1 to 31 letters, digits, '_' or '-'" },
		{ "a name too long", "[tunnel abcdefghijklmnopqrstuvwxyz0123456]\n", 1,
		  "bad tunnel name 'abcdefghijklmnopqrstuvwxyz0123456': use 1 to 31 letters, "
		  "digits, '_' or '-'" },
		{ "no ']'", "[tunnel a\n", 1, "missing ']' in section header '[tunnel a'" },
		{ "text after the header", "[tunnel a] peer = 1\n", 1,
		  "text after section header: 'peer = 1'" },
		{ "no peer", "[tunnel a]\nprefixes = 198.18.64.0/24\n[tunnel b]\n", 1,
		  "tunnel 'a' has no peer" },
		{ "no prefixes, the last tunnel", T("a", "198.18.0.2", "key = 1\n"), 1,
		  "tunnel 'a' has no prefixes: nothing would go into it or come from it" },
		{ "too many prefixes",
		  T("a", "198.18.0.2",
		    "prefixes = 198.18.64.0/24 198.18.65.0/24 198.18.66.0/24 198.18.67.0/24\n"
		    "prefixes = 198.18.68.0/24 198.18.69.0/24 198.18.70.0/24 198.18.71.0/24\n"
		    "prefixes = 198.18.72.0/24\n"),
		  5, "tunnel 'a': too many prefixes: at most 8" },
		{ "a prefix with host bits", T("a", "198.18.0.2", "prefixes = 198.18.64.1/24\n"), 3,
		  "prefix '198.18.64.1/24' has host bits set" },
		{ "a prefix without a length", T("a", "198.18.0.2", "prefixes = 198.18.64.1\n"), 3,
		  "bad prefix '198.18.64.1': expected ADDR/LEN" },
		{ "a prefix too long", T("a", "198.18.0.2", "prefixes = 198.18.64.1/33\n"), 3,
		  "bad prefix '198.18.64.1/33': expected ADDR/LEN" },
		{ "a peer that is no address", T("a", "198.18.0.256", ""), 2,
		  "bad value '198.18.0.256' for peer: expected an IPv4 or IPv6 address" },
		{ "a peer with a length", T("a", "198.18.0.2/32", ""), 2,
		  "bad value '198.18.0.2/32' for peer: expected an IPv4 or IPv6 address" },
		{ "bad encap", T("a", "198.18.0.2", "encap = udp\n"), 3,
		  "bad value 'udp' for encap: expected gre or gre-udp" },
		{ "bad seq", T("a", "198.18.0.2", "seq = maybe\n"), 3,
		  "bad value 'maybe' for seq: expected yes or no" },
		{ "bad csum", T("a", "198.18.0.2", "csum = 2\n"), 3,
		  "bad value '2' for csum: expected yes or no" },
		{ "no value", T("a", "198.18.0.2", "key =\n"), 3, "key 'key' has no value" },
		{ "no '='", T("a", "198.18.0.2", "prefixes\n"), 3,
		  "expected 'key = value' or [tunnel NAME]" },
		{ "a key too long",
		  T("a", "198.18.0.2", "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghij = 1\n"),
		  3, "key too long: at most 49 characters" },
	};
	struct tunfile f;
	struct line_error err;
	char row[64];

	printf("case: each refusal, its line and its words\n");
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		CHECK_ROW(parse(rows[i].text, false, &f, &err) == -EINVAL, rows[i].row);
		CHECK_ROW(err.line == rows[i].line, rows[i].row);
		if (strcmp(err.msg, rows[i].msg) != 0)
			fprintf(stderr, "  '%s': got %d: %s\n", rows[i].row, err.line, err.msg);
		CHECK_ROW(strcmp(err.msg, rows[i].msg) == 0, rows[i].row);
		tunfile_free(&f);
	}

	printf("case: a NUL byte in the middle, a line too long, CRLF, a byte order mark\n");
	{
		static const char nul[] = "[tunnel a]\npeer = 198.18.0.2\nkey\0 = 1\n";
		char text[400];

		CHECK_INT(tunfile_parse(nul, sizeof(nul) - 1, false, &f, &err), -EINVAL);
		CHECK_INT(err.line, 3);
		CHECK_STR(err.msg, "NUL byte in line: this is not a text file");
		tunfile_free(&f);
		snprintf(text, sizeof(text), "[tunnel a]\n; %0199d\n", 0);
		CHECK_INT(parse(text, false, &f, &err), -EINVAL);
		CHECK_INT(err.line, 2);
		CHECK_STR(err.msg, "line too long: at most 198 characters");
		tunfile_free(&f);
		/* 198 bytes is the longest taken. */
		snprintf(text, sizeof(text), "[tunnel a]\n; %0196d\npeer = 198.18.0.2\n", 0);
		CHECK_INT(parse(text, false, &f, &err), -EINVAL);
		CHECK_STR(err.msg, "tunnel 'a' has no prefixes: nothing would go into it or come "
				   "from it");
		tunfile_free(&f);
		CHECK_INT(parse("[tunnel a]\r\npeer = 198.18.0.2\r\nprefixes = 198.18.64.0/24\r\n",
				false, &f, &err),
			  0);
		CHECK_INT(f.n, 1);
		tunfile_free(&f);
		CHECK_INT(parse("\xef\xbb\xbf[tunnel a]\npeer = 198.18.0.2\nprefixes = "
				"198.18.64.0/24\n",
				false, &f, &err),
			  0);
		CHECK_INT(f.n, 1);
		tunfile_free(&f);
	}

	printf("case: too many tunnels\n");
	{
		size_t size = (TUNNELS_MAX + 1) * 100, len = 0;
		char *text = malloc(size);

		for (unsigned i = 0; i <= TUNNELS_MAX; i++)
			len += (size_t)snprintf(text + len, size - len,
						"[tunnel t%u]\npeer = 198.18.0.2\nkey = %u\n"
						"prefixes = 198.18.%u.%u/32\n",
						i, i, 64 + i / 256, i % 256);
		CHECK_INT(tunfile_parse(text, len, false, &f, &err), -E2BIG);
		CHECK_INT(err.line, 4 * TUNNELS_MAX + 1);
		snprintf(row, sizeof(row), "too many tunnels: at most %d", TUNNELS_MAX);
		CHECK_STR(err.msg, row);
		tunfile_free(&f);
		/* One fewer is taken, the rules checked across all of them. */
		len = 0;
		for (unsigned i = 0; i < TUNNELS_MAX; i++)
			len += (size_t)snprintf(text + len, size - len,
						"[tunnel t%u]\npeer = 198.18.0.2\nkey = %u\n"
						"prefixes = 198.18.%u.%u/32\n",
						i, i, 64 + i / 256, i % 256);
		CHECK_INT(tunfile_parse(text, len, false, &f, &err), 0);
		CHECK_INT(f.n, TUNNELS_MAX);
		tunfile_free(&f);
		free(text);
	}
}

static void test_one_tunnel(void)
{
	struct tunnel_spec s;
	struct line_error err;
	const char *keys = "peer = 198.18.0.2\nkey = 9\nprefixes = 198.18.70.0/24\n";

	printf("case: one tunnel's keys, as the control socket takes them\n");
	CHECK_INT(tunfile_parse_tunnel("x", keys, strlen(keys), false, &s, &err), 0);
	CHECK_STR(s.name, "x");
	CHECK_U64(s.key, 9);
	CHECK_INT(s.nprefixes, 1);
	CHECK_INT(tunfile_parse_tunnel("x/y", keys, strlen(keys), false, &s, &err), -EINVAL);
	CHECK_STR(err.msg, "bad tunnel name 'x/y': use 1 to 31 letters, digits, '_' or '-'");
	CHECK_INT(tunfile_parse_tunnel("x", "[tunnel y]\n", 11, false, &s, &err), -EINVAL);
	CHECK_STR(err.msg, "a section header in one tunnel's keys");
	CHECK_INT(tunfile_parse_tunnel("x", "key = 1\n", 8, false, &s, &err), -EINVAL);
	CHECK_STR(err.msg, "tunnel 'x' has no peer");
	CHECK_INT(err.line, 0);
	CHECK_INT(tunfile_parse_tunnel("x", "peer = 10.0.0.1\n", 16, false, &s, &err), -EINVAL);
	CHECK_INT(err.line, 1);
	CHECK_STR(err.msg, "peer 10.0.0.1 is outside the benchmarking ranges 198.18.0.0/15 and "
			   "2001:2::/48 (--any-address allows it)");
}

static struct tunnel_spec one(const char *name, const char *text)
{
	struct tunnel_spec s;
	struct line_error err;

	if (tunfile_parse_tunnel(name, text, strlen(text), false, &s, &err)) {
		fprintf(stderr, "%s: %s\n", name, err.msg);
		abort();
	}
	return s;
}

static void test_changes(void)
{
	struct tunnel_spec set[2], s;
	struct line_error err;

	printf("case: a change through the control socket: the file's rules\n");
	set[0] = one("a", "peer = 198.18.0.2\nkey = 1\nprefixes = 198.18.64.0/24\n");
	set[1] = one("b", "peer = 198.18.0.2\nkey = 2\nprefixes = 198.18.65.0/24 2001:2::/64\n");
	s = one("c", "peer = 198.18.0.2\nkey = 3\nprefixes = 198.18.66.0/24\n");
	CHECK_INT(tunfile_check_change(set, 2, TUNFILE_ADD, &s, &err), 0);
	CHECK_INT(tunfile_check_change(set, 2, TUNFILE_REPLACE, &s, &err), -ENOENT);
	CHECK_STR(err.msg, "no tunnel 'c'");
	CHECK_INT(tunfile_check_change(set, 2, TUNFILE_REMOVE, &s, &err), -ENOENT);
	s = one("a", "peer = 198.18.0.2\nkey = 3\nprefixes = 198.18.66.0/24\n");
	CHECK_INT(tunfile_check_change(set, 2, TUNFILE_ADD, &s, &err), -EEXIST);
	CHECK_STR(err.msg, "duplicate tunnel 'a'");
	CHECK_INT(tunfile_check_change(set, 2, TUNFILE_REMOVE, &s, &err), 0);
	/* A replace may keep what the tunnel had: it is not another's. */
	s = one("b", "peer = 198.18.0.2\nkey = 2\nprefixes = 2001:2::/64\n");
	CHECK_INT(tunfile_check_change(set, 2, TUNFILE_REPLACE, &s, &err), 0);
	s = one("b", "peer = 198.18.0.2\nkey = 1\nprefixes = 2001:2::/64\n");
	CHECK_INT(tunfile_check_change(set, 2, TUNFILE_REPLACE, &s, &err), -EEXIST);
	CHECK_STR(err.msg, "tunnel 'b': peer 198.18.0.2 key 1 is tunnel 'a''s already: a packet "
			   "could not tell them apart");
	CHECK_INT(err.line, 0);
	s = one("c", "peer = 198.18.0.2\nkey = 3\nprefixes = 198.18.67.0/24 2001:2::/64\n");
	CHECK_INT(tunfile_check_change(set, 2, TUNFILE_ADD, &s, &err), -EEXIST);
	CHECK_STR(err.msg, "tunnel 'c': prefix 2001:2::/64 is tunnel 'b''s already");
	s = one("c", "peer = 198.18.0.2\nkey = 3\nprefixes = 198.18.64.0/25\n");
	CHECK_INT(tunfile_check_change(set, 2, TUNFILE_ADD, &s, &err), 0); /* nested: taken */
	s.nprefixes = 0;
	CHECK_INT(tunfile_check_change(set, 2, TUNFILE_ADD, &s, &err), -EINVAL);
	CHECK_STR(err.msg, "tunnel 'c' has no prefixes: nothing would go into it or come from it");
	s = one("c", "peer = 198.18.0.2\nkey = 3\nprefixes = 198.18.66.0/24\n");
	{
		struct tunnel_spec *full = calloc(TUNNELS_MAX, sizeof(*full));

		for (unsigned i = 0; i < TUNNELS_MAX; i++)
			snprintf(full[i].name, sizeof(full[i].name), "t%u", i);
		CHECK_INT(tunfile_check_change(full, TUNNELS_MAX, TUNFILE_ADD, &s, &err), -E2BIG);
		CHECK_STR(err.msg, "too many tunnels: at most 16384");
		free(full);
	}
}

static void test_files(void)
{
	char dir[] = "/tmp/test_tunfile.XXXXXX", path[64], line[400];
	struct tunfile f;
	struct line_error err;
	FILE *fp;

	printf("case: files: a good one, one that is absent, a FIFO, a directory, /dev/zero\n");
	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/gwa.tunnels", dir);
	fp = fopen(path, "w");
	CHECK(fp != NULL);
	fputs("[tunnel a]\npeer = 198.18.0.2\nprefixes = 198.18.64.0/24\n", fp);
	fclose(fp);
	CHECK_INT(tunfile_load(path, false, &f, &err), 0);
	CHECK_INT(f.n, 1);
	tunfile_free(&f);
	unlink(path);
	CHECK_INT(tunfile_load(path, false, &f, &err), -ENOENT);
	CHECK_STR(err.msg, "cannot open: No such file or directory");
	CHECK_INT(err.line, 0);
	CHECK_STR(line_error_text("gwa.tunnels", &err, line, sizeof(line)),
		  "gwa.tunnels: cannot open: No such file or directory");
	err.line = 7;
	snprintf(err.msg, sizeof(err.msg), "tunnel 'a' has no peer");
	CHECK_STR(line_error_text("gwa.tunnels", &err, line, sizeof(line)),
		  "gwa.tunnels:7: tunnel 'a' has no peer");
	CHECK_INT(mkfifo(path, 0600), 0);
	CHECK_INT(tunfile_load(path, false, &f, &err), -EINVAL);
	CHECK_STR(err.msg, "not a regular file");
	unlink(path);
	CHECK_INT(tunfile_load(dir, false, &f, &err), -EINVAL);
	CHECK_INT(tunfile_load("/dev/zero", false, &f, &err), -EINVAL);
	CHECK_STR(err.msg, "not a regular file");
	rmdir(dir);
}

/* For unit/tunnels_bed: DIR/gwa.tunnels and DIR/gwb.tunnels of N tunnels, tunnel i's sites
 * 198.18.64.0 + i and 198.18.128.0 + i, 2001:2:0:4000+i::/64 and 2001:2:0:8000+i::/64. */
static int bed(const char *dir, unsigned n)
{
	static const struct {
		const char *file;
		uint8_t far4, far6; /* the far side's pools: 198.18.X.0, 2001:2:0:X000:: */
	} sides[] = { { "gwa.tunnels", 128, 0x80 }, { "gwb.tunnels", 64, 0x40 } };

	printf("case: the bed's tunnel files of %u tunnels, every tunnel looked up\n", n);
	for (size_t side = 0; side < 2; side++) {
		char path[512];
		struct tunfile f;
		struct line_error err;
		struct tunnels *t;
		unsigned wrong = 0;

		snprintf(path, sizeof(path), "%s/%s", dir, sides[side].file);
		CHECK_INT(tunfile_load(path, false, &f, &err), 0);
		if (err.msg[0])
			fprintf(stderr, "%s:%d: %s\n", path, err.line, err.msg);
		CHECK_INT(f.n, n);
		CHECK_INT(tunnels_build(f.specs, f.n, NULL, &t), 0);
		for (unsigned i = 0; t && i < n; i++) {
			uint8_t a4[4] = { 198, 18, (uint8_t)(sides[side].far4 + i / 256),
					  (uint8_t)(i % 256) };
			uint8_t a6[16] = { 0x20, 0x01, 0, 2, 0, 0 };
			uint32_t at4, at6, dec = TUNNELS_NONE;
			const struct tunnel *tn;

			a6[6] = (uint8_t)(sides[side].far6 + (i >> 8));
			a6[7] = (uint8_t)(i & 0xff);
			a6[15] = 2;
			at4 = tunnels_encap(t, AF_INET, a4);
			at6 = tunnels_encap(t, AF_INET6, a6);
			if (at4 == TUNNELS_NONE || at6 != at4) {
				wrong++;
				continue;
			}
			tn = tunnels_at(t, at4);
			/* The tunnel of both sites is the one of key i + 1 from the peer. */
			wrong += !(tn->gre_flags & GRE_F_KEY) || tn->key != i + 1 ||
				 tunnels_decap(t, tn->family, tn->peer, true, i + 1, &dec) !=
					 DROP_NONE ||
				 dec != at4;
		}
		CHECK_ROW(wrong == 0, sides[side].file);
		tunnels_free(t);
		tunfile_free(&f);
	}
	return check_done("test_tunfile --bed");
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "--bed") == 0) {
		uint64_t n;

		if (parse_u64(argv[3], 1, TUNNELS_MAX, &n))
			return 2;
		return bed(argv[2], (unsigned)n);
	}
	test_good();
	test_refusals();
	test_one_tunnel();
	test_changes();
	test_files();
	return check_done("test_tunfile");
}
