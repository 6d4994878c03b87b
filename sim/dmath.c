/* dmath.c: deterministic log and exp (see dmath.h).
 *
 * The reductions and polynomial coefficients are those of fdlibm's e_log.c
 * and e_exp.c (Sun Microsystems, freely distributable): log reduces x to
 * 2^k (1 + f) with 1 + f in [sqrt(2)/2, sqrt(2)) and evaluates
 * log(1 + f) = 2 atanh(f / (2 + f)) with a minimax polynomial; exp
 * reduces x = k ln2 + r with |r| <= ln2 / 2 and uses a rational
 * approximation of e^r. log1p and expm1 use Goldberg's and Kahan's
 * corrections on top of them. */
#include "dmath.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static const double ln2_hi = 6.93147180369123816490e-01; /* 0x3fe62e42 fee00000 */
static const double ln2_lo = 1.90821492927058770002e-10; /* 0x3dea39ef 35793c76 */
static const double inv_ln2 = 1.44269504088896338700e+00;

static uint64_t bits_of(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

static double of_bits(uint64_t b)
{
    double x;
    memcpy(&x, &b, sizeof x);
    return x;
}

/* y * 2^k, exactly where the result is normal (a subnormal result is
 * rounded once, as IEEE-754 multiplication does). */
static double scale2(double y, int k)
{
    if (k > 1023) {
        y *= 0x1p1023;
        k -= 1023;
        if (k > 1023)
            k = 1023;
    } else if (k < -1022) {
        y *= 0x1p-1022;
        k += 1022;
        if (k < -1022)
            k = -1022;
    }
    return y * of_bits((uint64_t)(k + 1023) << 52);
}

double sim_log(double x)
{
    static const double lg1 = 6.666666666666735130e-01, lg2 = 3.999999999940941908e-01,
                        lg3 = 2.857142874366239149e-01, lg4 = 2.222219843214978396e-01,
                        lg5 = 1.818357216161805012e-01, lg6 = 1.531383769920937332e-01,
                        lg7 = 1.479819860511658591e-01;
    if (x != x || x == INFINITY)
        return x;
    if (x < 0)
        return NAN;
    if (x == 0)
        return -INFINITY;

    int k = 0;
    uint64_t b = bits_of(x);
    if ((b >> 52) == 0) { /* subnormal: make it normal first */
        x *= 0x1p54;
        k = -54;
        b = bits_of(x);
    }
    k += (int)(b >> 52) - 1023;
    double y = of_bits((b & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL); /* [1, 2) */
    if (y >= 1.41421356237309504880) {
        y *= 0.5;
        k++;
    }
    double f = y - 1.0; /* exact */
    double s = f / (2.0 + f);
    double z = s * s;
    double w = z * z;
    double t1 = w * (lg2 + w * (lg4 + w * lg6));
    double t2 = z * (lg1 + w * (lg3 + w * (lg5 + w * lg7)));
    double r = t2 + t1;
    double hfsq = 0.5 * f * f;
    double dk = (double)k;
    return dk * ln2_hi - ((hfsq - (s * (hfsq + r) + dk * ln2_lo)) - f);
}

double sim_exp(double x)
{
    static const double p1 = 1.66666666666666019037e-01, p2 = -2.77777777770155933842e-03,
                        p3 = 6.61375632143793436117e-05, p4 = -1.65339022054652515390e-06,
                        p5 = 4.13813679705723846039e-08;
    if (x != x)
        return x;
    if (x > 7.09782712893383973096e+02)
        return INFINITY;
    if (x < -7.45133219101941108420e+02)
        return 0.0;
    if (x > -0x1p-28 && x < 0x1p-28)
        return 1.0 + x;

    int k = (int)(x * inv_ln2 + (x < 0 ? -0.5 : 0.5));
    double hi = x - (double)k * ln2_hi; /* k * ln2_hi is exact: its low 21 bits are 0 */
    double lo = (double)k * ln2_lo;
    double r = hi - lo;
    double t = r * r;
    double c = r - t * (p1 + t * (p2 + t * (p3 + t * (p4 + t * p5))));
    double y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi);
    return k == 0 ? y : scale2(y, k);
}

double sim_log1p(double x)
{
    if (x != x || x == INFINITY)
        return x;
    if (x < -1.0)
        return NAN;
    double u = 1.0 + x;
    if (u == 1.0)
        return x; /* |x| below half an ulp of 1: ln(1 + x) = x to double precision */
    /* Goldberg: the rounding error of 1 + x cancels in x / (u - 1). */
    return sim_log(u) * (x / (u - 1.0));
}

double sim_expm1(double x)
{
    if (x != x)
        return x;
    if (x > 7.09782712893383973096e+02)
        return INFINITY;
    double u = sim_exp(x);
    if (u == 1.0)
        return x;
    double um1 = u - 1.0;
    if (um1 == -1.0)
        return -1.0;
    /* Kahan: the rounding error of e^x cancels in x / ln(u). */
    return um1 * x / sim_log(u);
}
