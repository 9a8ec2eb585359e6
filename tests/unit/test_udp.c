/*
 * Unit tests for the namespace's UDP counters as gregw reads them (gateway/udp.c): the
 * "Udp:" table of /proc/net/snmp and the "Udp6..." lines of /proc/net/snmp6, as this
 * kernel writes them, with the columns found by name; a file without them is refused.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "check.h"
#include "udp.h"

struct mib_row {
	const char *name;
	int family;
	const char *text;
	int want_rc;
	uint64_t rcvbuf, csum;
};

static const struct mib_row rows[] = {
	{ "snmp as Linux 6.18 writes it", AF_INET,
	  "Ip: Forwarding DefaultTTL InReceives\n"
	  "Ip: 1 64 1003\n"
	  "Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors "
	  "IgnoredMulti MemErrors\n"
	  "Udp: 205 0 50 0 7 0 50 0 0\n"
	  "UdpLite: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors "
	  "InCsumErrors IgnoredMulti MemErrors\n"
	  "UdpLite: 0 0 0 0 0 0 99 0 0\n",
	  0, 7, 50 },
	{ "columns found by name, not place", AF_INET,
	  "Udp: InCsumErrors InDatagrams RcvbufErrors\nUdp: 18446744073709551615 1 2\n", 0, 2,
	  UINT64_MAX },
	{ "no InCsumErrors column (before Linux 3.10)", AF_INET,
	  "Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors\n"
	  "Udp: 1 2 3 4 5 6\n",
	  -ENODATA, 0, 0 },
	{ "a names line without values", AF_INET, "Udp: RcvbufErrors InCsumErrors\n", -ENODATA, 0,
	  0 },
	{ "a value that is not a number", AF_INET, "Udp: RcvbufErrors InCsumErrors\nUdp: 1 x\n",
	  -ENODATA, 0, 0 },
	{ "UdpLite alone is not Udp", AF_INET, "UdpLite: RcvbufErrors InCsumErrors\nUdpLite: 1 2\n",
	  -ENODATA, 0, 0 },
	{ "snmp6 as Linux 6.18 writes it", AF_INET6,
	  "Ip6InReceives                   \t12\n"
	  "Udp6InDatagrams                 \t3\n"
	  "Udp6RcvbufErrors                \t4\n"
	  "Udp6InCsumErrors                \t5\n"
	  "UdpLite6InCsumErrors            \t6\n",
	  0, 4, 5 },
	{ "snmp6 without the last newline", AF_INET6, "Udp6InCsumErrors \t9\nUdp6RcvbufErrors \t8",
	  0, 8, 9 },
	{ "snmp6 without Udp6InCsumErrors", AF_INET6, "Udp6RcvbufErrors \t8\n", -ENODATA, 0, 0 },
	{ "the IPv4 file read as IPv6", AF_INET6, "Udp: RcvbufErrors InCsumErrors\nUdp: 1 2\n",
	  -ENODATA, 0, 0 },
	{ "empty", AF_INET, "", -ENODATA, 0, 0 },
};

int main(void)
{
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct mib_row *r = &rows[i];
		struct udp_mib m;
		int rc = udp_mib_parse(r->family, r->text, strlen(r->text), &m);

		CHECK_ROW(rc == r->want_rc, r->name);
		if (rc == 0 && r->want_rc == 0)
			CHECK_ROW(m.rcvbuf_errors == r->rcvbuf && m.csum_errors == r->csum,
				  r->name);
	}
	/* This machine's own file parses (/proc/net/snmp6 is missing where IPv6 is off). */
	{
		struct udp_mib m;

		CHECK_INT(udp_mib_read(AF_INET, &m), 0);
	}
	return check_done("test_udp");
}
