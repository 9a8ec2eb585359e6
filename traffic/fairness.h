/*
 * Jain's fairness index of a set of throughputs: (sum x)^2 / (n * sum x^2), from 1/n (one
 * gets everything) to 1 (all equal). R. Jain, D. Chiu, W. Hawe, DEC-TR-301, 1984. Pure.
 */
#ifndef TUNBED_TR_FAIRNESS_H
#define TUNBED_TR_FAIRNESS_H

#include <stddef.h>

/* Jain's index of x[0..n); 1 for n == 0 or all zero. */
double jain_index(const double *x, size_t n);

#endif
