/*
 * A minimal table-test harness: CHECK macros count failures and print where each happened;
 * check_done() prints a summary and gives main its exit status: a failure if any check
 * failed, or if none ran at all (a test that checks nothing proves nothing).
 */
#ifndef TUNBED_CHECK_H
#define TUNBED_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int check_failures;
static int check_count;

#define CHECK(cond)                                                                              \
	do {                                                                                     \
		check_count++;                                                                   \
		if (!(cond)) {                                                                   \
			check_failures++;                                                        \
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
		}                                                                                \
	} while (0)

#define CHECK_INT(got, want)                                                                  \
	do {                                                                                  \
		long long g_ = (long long)(got), w_ = (long long)(want);                      \
		check_count++;                                                                \
		if (g_ != w_) {                                                               \
			check_failures++;                                                     \
			fprintf(stderr, "%s:%d: %s is %lld, want %lld\n", __FILE__, __LINE__, \
				#got, g_, w_);                                                \
		}                                                                             \
	} while (0)

#define CHECK_U64(got, want)                                                                      \
	do {                                                                                      \
		uint64_t g_ = (got), w_ = (want);                                                 \
		check_count++;                                                                    \
		if (g_ != w_) {                                                                   \
			check_failures++;                                                         \
			fprintf(stderr, "%s:%d: %s is %" PRIu64 ", want %" PRIu64 "\n", __FILE__, \
				__LINE__, #got, g_, w_);                                          \
		}                                                                                 \
	} while (0)

#define CHECK_STR(got, want)                                                                  \
	do {                                                                                  \
		const char *g_ = (got), *w_ = (want);                                         \
		check_count++;                                                                \
		if (strcmp(g_, w_) != 0) {                                                    \
			check_failures++;                                                     \
			fprintf(stderr, "%s:%d: %s is\n  \"%s\"\nwant\n  \"%s\"\n", __FILE__, \
				__LINE__, #got, g_, w_);                                      \
		}                                                                             \
	} while (0)

/* For table rows: names the row that failed. */
#define CHECK_ROW(cond, row)                                                                       \
	do {                                                                                       \
		check_count++;                                                                     \
		if (!(cond)) {                                                                     \
			check_failures++;                                                          \
			fprintf(stderr, "%s:%d: row '%s': CHECK(%s) failed\n", __FILE__, __LINE__, \
				(row), #cond);                                                     \
		}                                                                                  \
	} while (0)

static inline int check_done(const char *name)
{
	printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
	if (check_count == 0) {
		fprintf(stderr, "%s: no check ran\n", name);
		return 1;
	}
	return check_failures ? 1 : 0;
}

#endif
