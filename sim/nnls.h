/* nnls.h: non-negative least squares, the calibration's estimator.
 *
 * Solves   minimise ||A x - b||_2   subject to   x >= 0
 * for a dense m x n matrix A (row-major) with Lawson and Hanson's
 * active-set algorithm ("Solving Least Squares Problems", 1974, ch. 23):
 * variables enter the passive set in order of their gradient, each
 * unconstrained sub-problem is solved by Householder QR, and a variable
 * whose solution turns negative is moved back to zero. Columns are scaled
 * to unit norm first (the constraint x >= 0 does not change), so counts of
 * bytes and counts of polls weigh alike.
 *
 * A column that is a combination of columns already passive has a zero
 * gradient and never enters: of exactly collinear columns, one carries the
 * cost and the others are 0 (sim_nnls_collinear() names such columns).
 * No globals; memory is allocated per call. */
#ifndef SIM_NNLS_H
#define SIM_NNLS_H

#include <stdbool.h>
#include <stddef.h>

/* x[0..n) := the solution. Returns 0, -1 if out of memory, -2 if the
 * iteration limit (3n outer steps) was reached (x then holds the last
 * feasible iterate). m >= 1, n >= 1. */
int sim_nnls(const double *a, const double *b, size_t m, size_t n, double *x);

/* dup[j] := the index of an earlier column equal to column j up to a
 * positive factor (relative tolerance 1e-9), or -1; columns that are all
 * zero get -2. Returns how many columns have a twin or are zero. */
size_t sim_nnls_collinear(const double *a, size_t m, size_t n, int *dup);

#endif
