/*
 * Unit tests for common/flow.c: flow_hash gives exactly the values gregw's flow table had
 * before it moved here (so slots and GRE-in-UDP source ports stay where they were), is never
 * 0, and changes with every byte of the key.
 */
#include <string.h>
#include <sys/socket.h>

#include "check.h"
#include "flow.h"

struct row {
	const char *name;
	uint8_t family, proto;
	uint16_t port0, port1;
	uint8_t addr0[16], addr1[16];
	uint32_t want; /* flow_hash on a little-endian host, as gateway/flows.c computed it */
};

static const struct row rows[] = {
	{ "all zero: never 0", 0, 0, 0, 0, { 0 }, { 0 }, 0x00000001u },
	{ "TCP4", AF_INET, 6, 40000, 5201, { 198, 18, 1, 2 }, { 198, 18, 3, 2 }, 0xf699e0fau },
	{ "TCP4, next port",
	  AF_INET,
	  6,
	  40001,
	  5201,
	  { 198, 18, 1, 2 },
	  { 198, 18, 3, 2 },
	  0x6735dec0u },
	{ "UDP4, ends swapped",
	  AF_INET,
	  17,
	  5201,
	  40000,
	  { 198, 18, 3, 2 },
	  { 198, 18, 1, 2 },
	  0xd632f082u },
	{ "ICMP4, no ports", AF_INET, 1, 0, 0, { 198, 18, 0, 1 }, { 198, 18, 0, 2 }, 0x924320fbu },
	{ "TCP6",
	  AF_INET6,
	  6,
	  443,
	  50000,
	  { 0x20, 1, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2 },
	  { 0x20, 1, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 2 },
	  0x37ddd241u },
	{ "ICMPv6",
	  AF_INET6,
	  58,
	  0,
	  0,
	  { 0x20, 1, 0, 2, 0, 0, 0, 0xff, 0, 0, 0, 0, 0, 0, 0, 1 },
	  { 0x20, 1, 0, 2, 0, 0, 0, 0xff, 0, 0, 0, 0, 0, 0, 0, 2 },
	  0x36508c21u },
};

static void key_of(const struct row *r, struct flow_key *k)
{
	memset(k, 0, sizeof(*k));
	k->family = r->family;
	k->proto = r->proto;
	k->port[0] = r->port0;
	k->port[1] = r->port1;
	memcpy(k->addr[0], r->addr0, sizeof(k->addr[0]));
	memcpy(k->addr[1], r->addr1, sizeof(k->addr[1]));
}

static void test_values(void)
{
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct flow_key k, again;

		key_of(&rows[i], &k);
		key_of(&rows[i], &again);
		CHECK_ROW(flow_hash(&k) != 0, rows[i].name);
		CHECK_ROW(flow_hash(&k) == flow_hash(&again), rows[i].name);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		CHECK_ROW(flow_hash(&k) == rows[i].want, rows[i].name);
#endif
	}
}

/* Every byte counts, the last word's six included: flipping one bit of any byte changes it. */
static void test_every_byte(void)
{
	struct flow_key k;
	uint32_t base;

	CHECK_INT(sizeof(struct flow_key), 38);
	key_of(&rows[1], &k);
	base = flow_hash(&k);
	for (size_t i = 0; i < sizeof(k); i++) {
		uint8_t *p = (uint8_t *)&k;

		p[i] ^= 0x01;
		CHECK(flow_hash(&k) != base);
		p[i] ^= 0x01;
	}
	CHECK(flow_hash(&k) == base);
}

int main(void)
{
	test_values();
	test_every_byte();
	return check_done("test_flow");
}
