/*
 * libFuzzer harness for the ping probes' reply parser (traffic/icmp.c): the first byte picks
 * the family, the rest is what a ping socket handed over. What it accepts must hold our
 * header and build back to the same fields; nothing may read past the input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "icmp.h"
#include "inet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t again[ICMP_HLEN + ICMP_PROBE_HLEN];
	struct icmp_probe pr;
	int family, rc;

	if (size < 1)
		return 0;
	family = data[0] & 1 ? AF_INET6 : AF_INET;
	data++;
	size--;
	rc = icmp_echo_parse(data, size, family, &pr);
	if (rc < 0)
		return 0;
	if ((size_t)rc != size || size < ICMP_HLEN + ICMP_PROBE_HLEN)
		abort();
	if (icmp_echo_build(again, sizeof(again), family, &pr, ICMP_PROBE_HLEN) !=
		    (int)sizeof(again) ||
	    memcmp(again + ICMP_HLEN, data + ICMP_HLEN, ICMP_PROBE_HLEN) != 0)
		abort();
	return 0;
}
