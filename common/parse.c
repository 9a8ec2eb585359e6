/*
 * Strict parsers for numbers, sizes, rates, booleans and CPU lists (see parse.h).
 */
#include "parse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/*
 * Reads leading decimal digits; refuses no string, an empty run and anything that overflows
 * 64 bits.
 */
static int read_digits(const char **sp, uint64_t *out)
{
	const char *s = *sp;
	uint64_t v = 0;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	for (; isdigit((unsigned char)*s); s++) {
		unsigned d = (unsigned)(*s - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*sp = s;
	*out = v;
	return 0;
}

/* The power of 1000 (or 1024) the suffix at s names: k 1, m 2, g 3, t 4 (up to max); else 0. */
static unsigned magnitude(const char *s, unsigned max)
{
	static const char suffixes[] = "kmgt";

	for (unsigned i = 0; i < max; i++)
		if (tolower((unsigned char)*s) == suffixes[i])
			return i + 1;
	return 0;
}

int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v;
	int rc = read_digits(&s, &v);

	if (rc)
		return rc;
	if (*s)
		return -EINVAL;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int parse_size(const char *s, uint64_t *out)
{
	unsigned shift;
	uint64_t v;
	int rc = read_digits(&s, &v);

	if (rc)
		return rc;
	shift = 10 * magnitude(s, 3); /* k, m, g */
	if (shift) {
		s++;
		if (strcasecmp(s, "ib") == 0)
			s += 2;
	}
	if (strcasecmp(s, "b") == 0)
		s++;
	if (*s)
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = v << shift;
	return 0;
}

int parse_rate(const char *s, uint64_t *bps)
{
	static const double si[] = { 1, 1e3, 1e6, 1e9, 1e12 };
	double v, mult;
	char num[32], *end;
	size_t n;

	/* Only digits and one point reach strtod: no sign, space, hex, exponent, inf or nan. */
	if (!s)
		return -EINVAL;
	n = strspn(s, "0123456789.");
	if (n == 0 || n >= sizeof(num))
		return -EINVAL;
	memcpy(num, s, n);
	num[n] = '\0';
	v = strtod(num, &end);
	if (*end || end == num)
		return -EINVAL;
	s += n;
	mult = si[magnitude(s, 4)]; /* k, m, g, t */
	if (mult > 1)
		s++;
	if (*s && strcasecmp(s, "bit") != 0)
		return -EINVAL;
	v *= mult;
	if (!isfinite(v) || v >= 18446744073709549568.0)
		return -ERANGE;
	if (v < 1)
		return -EINVAL;
	*bps = (uint64_t)llround(v);
	return 0;
}

int parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "on", "yes", "true", "1" };
	static const char *const no[] = { "off", "no", "false", "0" };

	if (!s)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

int parse_cpulist(const char *s, cpu_set_t *out)
{
	unsigned n;

	return parse_cpulist_ordered(s, out, NULL, 0, &n);
}

int parse_cpulist_ordered(const char *s, cpu_set_t *out, int *order, unsigned max, unsigned *n)
{
	uint64_t lo, hi;
	int rc;

	CPU_ZERO(out);
	*n = 0;
	if (!s || !*s)
		return -EINVAL;
	for (;;) {
		rc = read_digits(&s, &lo);
		if (rc)
			return rc == -ERANGE ? -ERANGE : -EINVAL;
		hi = lo;
		if (*s == '-') {
			s++;
			rc = read_digits(&s, &hi);
			if (rc)
				return rc == -ERANGE ? -ERANGE : -EINVAL;
			if (hi < lo)
				return -EINVAL;
		}
		if (hi >= CPU_SETSIZE)
			return -ERANGE;
		for (uint64_t c = lo; c <= hi; c++) {
			if (order && *n < max && !CPU_ISSET(c, out))
				order[(*n)++] = (int)c;
			CPU_SET(c, out);
		}
		if (*s == '\0')
			break;
		if (*s != ',')
			return -EINVAL;
		s++;
	}
	return CPU_COUNT(out);
}

int format_cpulist(const cpu_set_t *set, char *buf, unsigned long size)
{
	unsigned long used = 0;
	int n;

	if (size == 0)
		return -ENOSPC;
	buf[0] = '\0';
	for (int c = 0; c < CPU_SETSIZE; c++) {
		int last = c;

		if (!CPU_ISSET(c, set))
			continue;
		while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, set))
			last++;
		if (last == c)
			n = snprintf(buf + used, size - used, "%s%d", used ? "," : "", c);
		else
			n = snprintf(buf + used, size - used, "%s%d-%d", used ? "," : "", c, last);
		if (n < 0 || (unsigned long)n >= size - used)
			return -ENOSPC;
		used += (unsigned long)n;
		c = last;
	}
	return (int)used;
}

int format_rate(uint64_t bps, char *buf, unsigned long size)
{
	static const struct {
		uint64_t div;
		const char *unit;
	} units[] = {
		{ 1000000000000ull, "t" }, { 1000000000, "g" }, { 1000000, "m" }, { 1000, "k" }
	};
	int n = -1;

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]) && n < 0; i++) {
		if (bps < units[i].div)
			continue;
		if (bps % units[i].div == 0)
			n = snprintf(buf, size, "%llu%sbit",
				     (unsigned long long)(bps / units[i].div), units[i].unit);
		else
			n = snprintf(buf, size, "%.4g%sbit", (double)bps / (double)units[i].div,
				     units[i].unit);
	}
	if (n < 0)
		n = snprintf(buf, size, "%llubit", (unsigned long long)bps);
	return (n < 0 || (unsigned long)n >= size) ? -ENOSPC : n;
}

const char *format_rate_text(double bps, char *buf, size_t size)
{
	if (bps >= 1e9)
		snprintf(buf, size, "%.2f Gbit/s", bps / 1e9);
	else if (bps >= 1e6)
		snprintf(buf, size, "%.1f Mbit/s", bps / 1e6);
	else
		snprintf(buf, size, "%.0f kbit/s", bps / 1e3);
	return buf;
}
