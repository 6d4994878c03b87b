/* nnls.c: Lawson and Hanson's NNLS (see nnls.h). */
#include "nnls.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Least squares on the k columns idx[] of the column-major m x n matrix u
 * (unit columns): s[j] for column idx[j], by Householder QR of a copy. A
 * column with no component left beyond the earlier ones gets 0. */
static void nnls_lstsq(const double *u, const double *b, size_t m, const size_t *idx, size_t k,
                       double *q, double *c, double *s)
{
    for (size_t j = 0; j < k; j++)
        memcpy(q + j * m, u + idx[j] * m, m * sizeof *q);
    memcpy(c, b, m * sizeof *c);
    size_t r = k < m ? k : m;
    for (size_t j = 0; j < r; j++) {
        double *qj = q + j * m;
        double norm = 0;
        for (size_t i = j; i < m; i++)
            norm += qj[i] * qj[i];
        norm = sqrt(norm);
        if (norm < 1e-13) {
            qj[j] = 0; /* dependent: its R diagonal is 0 */
            continue;
        }
        double alpha = qj[j] > 0 ? -norm : norm;
        double v0 = qj[j] - alpha; /* v = (v0, qj[j+1..m)) */
        double vnorm2 = v0 * v0;
        for (size_t i = j + 1; i < m; i++)
            vnorm2 += qj[i] * qj[i];
        /* Apply H = I - 2 v v^T / (v^T v) to the later columns and c. */
        for (size_t l = j + 1; l <= k; l++) {
            double *col = l < k ? q + l * m : c;
            double dot = v0 * col[j];
            for (size_t i = j + 1; i < m; i++)
                dot += qj[i] * col[i];
            double f = 2 * dot / vnorm2;
            col[j] -= f * v0;
            for (size_t i = j + 1; i < m; i++)
                col[i] -= f * qj[i];
        }
        qj[j] = alpha;
    }
    for (size_t jj = k; jj-- > 0;) {
        if (jj >= r || q[jj * m + jj] == 0) {
            s[jj] = 0;
            continue;
        }
        double v = c[jj];
        for (size_t l = jj + 1; l < k && l < r; l++)
            v -= q[l * m + jj] * s[l];
        s[jj] = v / q[jj * m + jj];
    }
}

int sim_nnls(const double *a, const double *b, size_t m, size_t n, double *x)
{
    double *u = malloc(m * n * sizeof *u);  /* A, column-major, unit columns */
    double *scale = malloc(n * sizeof *scale);
    double *w = malloc(n * sizeof *w);
    double *z = malloc(n * sizeof *z);      /* x of the scaled problem */
    double *s = malloc(n * sizeof *s);
    double *res = malloc(m * sizeof *res);
    double *q = malloc(m * n * sizeof *q);
    double *c = malloc(m * sizeof *c);
    size_t *passive = malloc(n * sizeof *passive);
    bool *in_p = calloc(n, sizeof *in_p);
    bool *banned = calloc(n, sizeof *banned);
    int rc = -1;
    if (!u || !scale || !w || !z || !s || !res || !q || !c || !passive || !in_p || !banned)
        goto out;
    double bnorm = 0;
    for (size_t i = 0; i < m; i++)
        bnorm += b[i] * b[i];
    bnorm = sqrt(bnorm);
    for (size_t j = 0; j < n; j++) {
        double nn = 0;
        for (size_t i = 0; i < m; i++)
            nn += a[i * n + j] * a[i * n + j];
        scale[j] = nn > 0 ? sqrt(nn) : 0;
        for (size_t i = 0; i < m; i++)
            u[j * m + i] = scale[j] > 0 ? a[i * n + j] / scale[j] : 0;
        z[j] = 0;
    }
    const double tol = 1e-11 * (bnorm > 0 ? bnorm : 1);
    size_t np = 0;
    rc = -2;
    for (size_t outer = 0; outer < 3 * n + 3; outer++) {
        /* Gradient of the zero set: w = U^T (b - U z). */
        for (size_t i = 0; i < m; i++) {
            double v = b[i];
            for (size_t k = 0; k < np; k++)
                v -= u[passive[k] * m + i] * z[passive[k]];
            res[i] = v;
        }
        size_t t = n;
        double best = tol;
        for (size_t j = 0; j < n; j++) {
            if (in_p[j] || banned[j] || scale[j] == 0)
                continue;
            double g = 0;
            for (size_t i = 0; i < m; i++)
                g += u[j * m + i] * res[i];
            w[j] = g;
            if (g > best) {
                best = g;
                t = j;
            }
        }
        if (t == n) {
            rc = 0;
            break;
        }
        in_p[t] = true;
        passive[np++] = t;
        for (bool first = true;; first = false) {
            nnls_lstsq(u, b, m, passive, np, q, c, s);
            bool feasible = true;
            for (size_t k = 0; k < np; k++)
                feasible &= s[k] > 0;
            if (feasible) {
                for (size_t k = 0; k < np; k++)
                    z[passive[k]] = s[k];
                break;
            }
            if (first && s[np - 1] <= 0) {
                /* The entering column cannot grow (rounding): leave it out. */
                in_p[t] = false;
                banned[t] = true;
                np--;
                break;
            }
            double alpha = 1;
            for (size_t k = 0; k < np; k++) {
                if (s[k] <= 0) {
                    double zk = z[passive[k]];
                    double al = zk / (zk - s[k]);
                    if (al < alpha)
                        alpha = al;
                }
            }
            size_t keep = 0;
            for (size_t k = 0; k < np; k++) {
                size_t j = passive[k];
                z[j] += alpha * (s[k] - z[j]);
                if (z[j] <= 1e-15 * (1 + fabs(s[k]))) {
                    z[j] = 0;
                    in_p[j] = false;
                } else {
                    passive[keep++] = j;
                }
            }
            np = keep;
            if (np == 0)
                break;
        }
        /* A variable moved out may enter again: only the current entrant
         * is banned, and only until the next one enters. */
        for (size_t j = 0; j < n; j++)
            if (j != t)
                banned[j] = false;
    }
    for (size_t j = 0; j < n; j++)
        x[j] = scale[j] > 0 ? z[j] / scale[j] : 0;
out:
    free(u);
    free(scale);
    free(w);
    free(z);
    free(s);
    free(res);
    free(q);
    free(c);
    free(passive);
    free(in_p);
    free(banned);
    return rc;
}

size_t sim_nnls_collinear(const double *a, size_t m, size_t n, int *dup)
{
    size_t found = 0;
    for (size_t j = 0; j < n; j++) {
        double nj = 0;
        for (size_t i = 0; i < m; i++)
            nj += a[i * n + j] * a[i * n + j];
        nj = sqrt(nj);
        dup[j] = -1;
        if (nj == 0) {
            dup[j] = -2;
            found++;
            continue;
        }
        for (size_t l = 0; l < j && dup[j] == -1; l++) {
            if (dup[l] == -2)
                continue;
            double nl = 0;
            for (size_t i = 0; i < m; i++)
                nl += a[i * n + l] * a[i * n + l];
            nl = sqrt(nl);
            double d = 0;
            for (size_t i = 0; i < m; i++) {
                double e = a[i * n + j] / nj - a[i * n + l] / nl;
                d += e * e;
            }
            if (sqrt(d) < 1e-9)
                dup[j] = (int)l;
        }
        found += dup[j] != -1;
    }
    return found;
}
