/*
 * Parsers for the values people type on command lines and in files: integers, byte sizes,
 * bit rates, booleans and CPU lists. All are pure and strict: the whole string must parse.
 * The format_* functions write CPU lists and rates back as text.
 */
#ifndef TUNBED_PARSE_H
#define TUNBED_PARSE_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Decimal integer in [min, max], no sign, no spaces. Returns 0, -EINVAL (not a number) or
 * -ERANGE (outside [min, max]).
 */
int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/*
 * Byte size: an integer with an optional binary suffix k, m or g (1024-based), optionally
 * followed by "b" or "ib" ("64k", "64KiB", "1m"). Returns 0, -EINVAL or -ERANGE (overflow).
 */
int parse_size(const char *s, uint64_t *out);

/*
 * Bit rate in bit/s: a decimal number with an optional SI suffix k, m, g or t (1000-based),
 * optionally followed by "bit" ("1gbit", "2.5g", "100mbit", "1000000"). Zero is refused.
 * Returns 0, -EINVAL or -ERANGE.
 */
int parse_rate(const char *s, uint64_t *bps);

/* on/off, yes/no, true/false, 1/0. Returns 0 or -EINVAL. */
int parse_bool(const char *s, bool *out);

/*
 * CPU list as in taskset and /sys: "0-3,6,8-9". Fills *out (cleared first) and returns the
 * number of CPUs in it, -EINVAL (syntax, empty list, reversed range) or -ERANGE (a CPU at or
 * above CPU_SETSIZE).
 */
int parse_cpulist(const char *s, cpu_set_t *out);

/*
 * parse_cpulist that also keeps the order: order[] gets the CPUs as listed ("1,0" is 1 then
 * 0; a range ascending; a CPU named twice only where it first appeared), at most max of
 * them, and *n how many it got.
 */
int parse_cpulist_ordered(const char *s, cpu_set_t *out, int *order, unsigned max, unsigned *n);

/* Formats a CPU set as a CPU list into buf. Returns the length or -ENOSPC. */
int format_cpulist(const cpu_set_t *set, char *buf, unsigned long size);

/*
 * Formats a bit rate the way parse_rate reads it: "1gbit", "2.5gbit", "100mbit", "999bit".
 * Returns the length or -ENOSPC.
 */
int format_rate(uint64_t bps, char *buf, unsigned long size);

/*
 * Formats a bit rate for people, as the text reports show it: "2.56 Gbit/s" (two decimals) from
 * 1 Gbit/s, "100.0 Mbit/s" (one) from 1 Mbit/s, "999 kbit/s" (none) below. Truncates to size,
 * like snprintf. Returns buf.
 */
const char *format_rate_text(double bps, char *buf, size_t size);

#endif
