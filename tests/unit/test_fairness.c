/*
 * Unit tests for traffic/fairness.c: Jain's index at its bounds and on worked examples.
 */
#include <math.h>

#include "check.h"
#include "fairness.h"

static void test_table(void)
{
	static const struct {
		const char *name;
		double x[8];
		size_t n;
		double want;
	} rows[] = {
		{ "none", { 0 }, 0, 1 },
		{ "one", { 5 }, 1, 1 },
		{ "all zero", { 0, 0, 0 }, 3, 1 },
		{ "equal", { 7, 7, 7, 7 }, 4, 1 },
		{ "equal, large", { 1e10, 1e10, 1e10 }, 3, 1 },
		{ "one of two", { 0, 3 }, 2, 1.0 / 2 },
		{ "one of five", { 0, 0, 9.5, 0, 0 }, 5, 1.0 / 5 },
		{ "one of eight", { 1, 0, 0, 0, 0, 0, 0, 0 }, 8, 1.0 / 8 },
		{ "1, 2, 3", { 1, 2, 3 }, 3, 36.0 / 42 },
		{ "1, 3", { 1, 3 }, 2, 16.0 / 20 },
		{ "half get twice", { 1, 1, 2, 2 }, 4, 36.0 / 40 },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		CHECK_ROW(fabs(jain_index(rows[i].x, rows[i].n) - rows[i].want) < 1e-12,
			  rows[i].name);
	CHECK(jain_index(NULL, 0) == 1);
}

/* The index does not depend on the unit or the order of the throughputs. */
static void test_invariance(void)
{
	static const double a[] = { 3, 1, 4, 1, 5, 9, 2, 6 };
	static const double b[] = { 6e6, 2e6, 9e6, 5e6, 1e6, 4e6, 1e6, 3e6 };

	CHECK(fabs(jain_index(a, 8) - jain_index(b, 8)) < 1e-12);
	CHECK(jain_index(a, 8) > 1.0 / 8 && jain_index(a, 8) < 1);
}

int main(void)
{
	test_table();
	test_invariance();
	return check_done("test_fairness");
}
