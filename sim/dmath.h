/* dmath.h: the elementary functions the simulator's random variates need,
 * computed with IEEE-754 basic operations (+ - * /, exact scaling) only.
 *
 * The C library's exp() and log() differ between libraries and versions in
 * the last bit, which would make a sampled value, and so a whole simulated
 * run, depend on the machine it ran on. These implementations (the fdlibm
 * reductions and polynomials) give the same bits wherever double
 * arithmetic is IEEE-754 binary64 without extended precision (SSE2 on
 * x86-64, AArch64) and multiply-adds are not fused (see below).
 * Accuracy: within 1 ulp for sim_log and sim_exp, a few ulp for sim_log1p
 * and sim_expm1; that is all a sampler needs. */
#ifndef SIM_DMATH_H
#define SIM_DMATH_H

/* No fused multiply-add in any file that includes this: a contraction
 * rounds once where the source rounds twice, so results would depend on
 * the compiler and the target's FMA. gcc does not contract in ISO C mode
 * (-std=c11); clang is told here. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* Natural logarithm. x = 0 gives -inf, x < 0 or NaN gives NaN, +inf gives
 * +inf. */
double sim_log(double x);

/* e^x. Overflows to +inf above about 709.78, underflows to 0 below about
 * -745.13; NaN gives NaN. */
double sim_exp(double x);

/* ln(1 + x), accurate for x near 0. x = -1 gives -inf, x < -1 NaN. */
double sim_log1p(double x);

/* e^x - 1, accurate for x near 0. */
double sim_expm1(double x);

#endif
