/*
 * Jain's fairness index (see fairness.h): R. Jain, D. Chiu, W. Hawe, "A Quantitative Measure
 * of Fairness and Discrimination for Resource Allocation in Shared Computer Systems",
 * DEC-TR-301, 1984.
 */
#include "fairness.h"

double jain_index(const double *x, size_t n)
{
	double sum = 0, sum_sq = 0;

	for (size_t i = 0; i < n; i++) {
		sum += x[i];
		sum_sq += x[i] * x[i];
	}
	/* Nobody got anything, so nobody got more than another. */
	if (n == 0 || sum_sq == 0)
		return 1;
	return sum * sum / ((double)n * sum_sq);
}
