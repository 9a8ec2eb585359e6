/*
 * libFuzzer harness for tunbed-traffic's --pairs file (traffic/pairs.h): any input is refused
 * with a line that says why (on a line of the input, or 0), or read into pairs of one family
 * each, inside the benchmarking ranges unless any_address (the input's parity) allowed more.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "pairs.h"
#include "traffic_limits.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool bench(const struct netaddr *a)
{
	struct netprefix p = { .addr = *a, .len = netaddr_len(a->family) * 8 };

	return netaddr_prefix_is_bench(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct traffic_pair out[TRAFFIC_PAIRS_MAX];
	struct line_error err;
	bool any = size % 2;
	unsigned n, lines = 1;

	for (size_t i = 0; i < size; i++)
		lines += data[i] == '\n';
	if (pairs_parse((const char *)data, size, any, out, &n, &err) != 0) {
		if (!err.msg[0] || err.line < 0 || (unsigned)err.line > lines)
			abort();
		return 0;
	}
	if (n == 0 || n > TRAFFIC_PAIRS_MAX)
		abort();
	for (unsigned i = 0; i < n; i++) {
		if (out[i].local.family != out[i].remote.family)
			abort();
		if (!any && (!bench(&out[i].local) || !bench(&out[i].remote)))
			abort();
	}
	return 0;
}
