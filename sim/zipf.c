/* zipf.c: rejection-inversion for Zipf (see zipf.h).
 *
 * With h(x) = x^-s and H(x) = (x^(1-s) - 1) / (1 - s) (log x when s = 1), a
 * uniform u over (H(1.5) - 1, H(n + 0.5)] is inverted to x = H^-1(u) and
 * rounded to the rank k; k is accepted when u falls within the part of the
 * interval that belongs to k's bar (u >= H(k + 0.5) - h(k)), or at once
 * when x is within the squeeze s_div of k. The helper forms keep H and
 * H^-1 accurate and continuous through s = 1 (the formulation of Apache
 * Commons RNG's RejectionInversionZipfSampler). */
#include "zipf.h"

#include <math.h>

#include "dmath.h"

/* log1p(x) / x, continuous at 0. */
static double helper1(double x)
{
    if (fabs(x) > 1e-8)
        return sim_log1p(x) / x;
    return 1 - x * (0.5 - x * (1.0 / 3 - 0.25 * x));
}

/* expm1(x) / x, continuous at 0. */
static double helper2(double x)
{
    if (fabs(x) > 1e-8)
        return sim_expm1(x) / x;
    return 1 + x * 0.5 * (1 + x * (1.0 / 3) * (1 + 0.25 * x));
}

static double zipf_h(const struct sim_zipf *z, double x)
{
    return sim_exp(-z->s * sim_log(x));
}

static double zipf_hint(const struct sim_zipf *z, double x)
{
    double lx = sim_log(x);
    return helper2(z->one_minus_s * lx) * lx;
}

static double zipf_hint_inv(const struct sim_zipf *z, double x)
{
    double t = x * z->one_minus_s;
    if (t < -1)
        t = -1;
    return sim_exp(helper1(t) * x);
}

int sim_zipf_init(struct sim_zipf *z, uint64_t n, double s)
{
    if (n == 0 || n > SIM_ZIPF_N_MAX || !(s >= 0) || s == INFINITY)
        return -1;
    z->n = n;
    z->s = s;
    z->one_minus_s = 1 - s;
    z->h_x1 = zipf_hint(z, 1.5) - 1;
    z->h_n = zipf_hint(z, (double)n + 0.5);
    z->s_div = 2 - zipf_hint_inv(z, zipf_hint(z, 2.5) - zipf_h(z, 2));
    return 0;
}

uint64_t sim_zipf_sample(const struct sim_zipf *z, struct sim_rng *r)
{
    if (z->s == 0)
        return 1 + sim_rng_below(r, z->n);
    for (;;) {
        double u = z->h_n + sim_rng_uniform(r) * (z->h_x1 - z->h_n);
        double x = zipf_hint_inv(z, u);
        double kd = x + 0.5;
        uint64_t k = kd < 1 ? 1 : kd >= (double)z->n ? z->n : (uint64_t)kd;
        if ((double)k - x <= z->s_div || u >= zipf_hint(z, (double)k + 0.5) - zipf_h(z, (double)k))
            return k;
    }
}
