/* exp.c: the points of experiments and sweeps, and their report (exp.h). */
#include "exp.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scenario.h"
#include "sys.h"
#include "util.h"

static const struct {
    const char *name, *unit, *desc;
} exp_metrics[EXP_M_N] = {
#define EXP_M_ROW_(e, name, unit, desc) [EXP_M_##e] = {name, unit, desc},
    EXP_METRICS(EXP_M_ROW_)
#undef EXP_M_ROW_
};

const char *exp_metric_name(enum exp_metric m)
{
    return (unsigned)m < EXP_M_N ? exp_metrics[m].name : NULL;
}

const char *exp_metric_unit(enum exp_metric m)
{
    return (unsigned)m < EXP_M_N ? exp_metrics[m].unit : NULL;
}

const char *exp_metric_desc(enum exp_metric m)
{
    return (unsigned)m < EXP_M_N ? exp_metrics[m].desc : NULL;
}

/* ---- the table ------------------------------------------------------------------ */

struct exp_point *exp_table_add(struct exp_table *t)
{
    if (fs_grow((void **)&t->points, &t->cap, t->n_points + 1, sizeof *t->points, 16))
        return NULL;
    struct exp_point *pt = &t->points[t->n_points++];
    memset(pt, 0, sizeof *pt);
    pt->steady = EXP_STEADY_UNCHECKED;
    return pt;
}

void exp_table_free(struct exp_table *t)
{
    free(t->points);
    t->points = NULL;
    t->n_points = t->cap = 0;
}

const struct exp_point *exp_table_find(const struct exp_table *t, const char *const *vals,
                                       unsigned n)
{
    for (size_t i = 0; i < t->n_points; i++) {
        bool ok = true;
        for (unsigned k = 0; k < n && ok; k++)
            ok = !vals[k] || !strcmp(t->points[i].param[k], vals[k]);
        if (ok)
            return &t->points[i];
    }
    return NULL;
}

/* ---- one point ---------------------------------------------------------------------- */

static double exp_div(double a, double b)
{
    return b > 0 ? a / b : 0;
}

/* The checksums of a layer set, summed over the layers. */
static uint64_t exp_layers(const struct csum_stats *cs, int base)
{
    uint64_t n = 0;
    for (int l = 0; l < CSUM_L_N; l++)
        n += cs->n[base + l];
    return n;
}

static void exp_figures(const struct sim_results *r, struct exp_point *pt)
{
    const struct sim_window *w = &r->window;
    double span = (double)(w->end_ns - w->start_ns) / 1e9;
    double *m = pt->m;
    uint64_t wire = 0, missed = 0, eager = 0, eager_bytes = 0, guest = 0, sends = 0, fwd = 0;
    for (size_t i = 0; i < r->n_ports; i++) {
        wire += w->port_delivered_wire_bytes[i];
        missed += w->port_rx_missed[i];
        eager += r->ports[i].eager_csum;
        eager_bytes += r->ports[i].eager_csum_bytes;
        guest += r->ports[i].guest_computed;
        sends += r->ports[i].send_calls;
        fwd += r->ports[i].forwarded;
    }
    m[EXP_M_OFFERED_MPPS] = exp_div((double)w->offered, span) / 1e6;
    m[EXP_M_MPPS] = exp_div((double)w->delivered, span) / 1e6;
    m[EXP_M_GBPS] = exp_div((double)wire * 8, span) / 1e9;
    m[EXP_M_RX_MISSED] = exp_div((double)missed, (double)w->offered);
    const uint64_t *f = w->dp.fcache.n;
    double look = (double)f[FCACHE_STAT_LOOKUPS];
    m[EXP_M_EMC] = exp_div((double)f[FCACHE_STAT_EMC_HITS], look);
    m[EXP_M_SMC] = exp_div((double)f[FCACHE_STAT_SMC_HITS], look);
    m[EXP_M_MEGAFLOW] = exp_div((double)f[FCACHE_STAT_MEGAFLOW_HITS], look);
    m[EXP_M_UPCALL] = exp_div((double)f[FCACHE_STAT_UPCALLS], look);
    m[EXP_M_SUBTABLES] = (double)r->dp->fcache.n[FCACHE_STAT_SUBTABLES];
    /* Checksums per packet the datapath received (the dropped ones cost
     * nothing). */
    const struct csum_stats *cs = &r->dp->csum;
    double offered = 0;
    for (size_t i = 0; i < r->n_pmds; i++)
        offered += (double)r->pmds[i].rx_packets;
    m[EXP_M_CS_GUEST] = exp_div((double)guest, offered);
    m[EXP_M_CS_EAGER] = exp_div((double)eager, offered);
    m[EXP_M_CS_EGRESS] = exp_div((double)exp_layers(cs, CSUM_STAT_SW), offered);
    m[EXP_M_CS_NIC] = exp_div((double)exp_layers(cs, CSUM_STAT_OFFLOADED), offered);
    m[EXP_M_CS_LEFT] = exp_div((double)cs->n[CSUM_STAT_GUEST_PARTIAL], offered);
    m[EXP_M_CS_VERIFIED] = exp_div((double)cs->n[CSUM_STAT_SW_VERIFIED], offered);
    m[EXP_M_CS_BYTES] = exp_div((double)(cs->n[CSUM_STAT_SW_BYTES] +
                                         cs->n[CSUM_STAT_SW_VERIFY_BYTES] + eager_bytes),
                                offered);
    m[EXP_M_SENDS] = (double)sends;
    m[EXP_M_PKTS_PER_SEND] = exp_div((double)(r->delivered + fwd), (double)sends);
    const struct sim_hist *h = &r->latency;
    m[EXP_M_LAT_P50] = (double)sim_hist_percentile(h, 50) / 1e3;
    m[EXP_M_LAT_P99] = (double)sim_hist_percentile(h, 99) / 1e3;
    m[EXP_M_LAT_P999] = (double)sim_hist_percentile(h, 99.9) / 1e3;
    m[EXP_M_LAT_MAX] = h->count ? (double)h->max / 1e3 : 0;
    double lo = INFINITY, hi = 0, busy = 0;
    for (size_t i = 0; i < r->n_pmds; i++) {
        double mpps = exp_div((double)r->pmds[i].window.rx_packets, span) / 1e6;
        lo = mpps < lo ? mpps : lo;
        hi = mpps > hi ? mpps : hi;
        busy += exp_div((double)r->pmds[i].window.busy_ns, span * 1e9);
    }
    m[EXP_M_PMD_MIN] = r->n_pmds ? lo : 0;
    m[EXP_M_PMD_MAX] = hi;
    m[EXP_M_BALANCE] = exp_div(lo, hi);
    m[EXP_M_BUSY] = r->n_pmds ? busy / (double)r->n_pmds : 0;
    /* The CDF at 0, 2, ..., 98 percent and into the tail. */
    static const double tail[] = {99, 99.5, 99.9, 99.95, 99.99, 100};
    pt->n_cdf = 0;
    for (unsigned k = 0; h->count && k < EXP_CDF_POINTS; k++) {
        double p = k < 50 ? 2.0 * k : tail[k - 50];
        pt->cdf_us[k] = (double)sim_hist_percentile(h, p) / 1e3;
        pt->cdf_p[k] = p / 100;
        pt->n_cdf = k + 1;
    }
}

/* Runs scenario 'path' with sets into pt; half: over the first half of
 * the measurement window only. */
static int exp_run(const char *path, const char *const *sets, size_t n_sets, bool half,
                   struct exp_point *pt, char *err, size_t errlen)
{
    struct scenario sc;
    if (scenario_load(path, sets, n_sets, &sc, err, errlen))
        return -1;
    if (half)
        sc.sim.duration_ns = sc.sim.warmup_ns + (sc.sim.duration_ns - sc.sim.warmup_ns) / 2;
    struct sim_results res;
    int rc = sim_run(&sc.sim, &res, err, errlen);
    if (rc == 0) {
        bool conserved = res.offered + res.copies == res.delivered + res.dropped + res.in_flight;
        uint64_t bad = 0;
        for (size_t i = 0; i < res.n_ports; i++)
            bad += res.ports[i].verify.frames - res.ports[i].verify.ok;
        if (!conserved || bad) {
            fs_errf(err, errlen, "%s: %s", path,
                    conserved ? "the sinks found violations" : "packets were lost");
            rc = -1;
        } else {
            exp_figures(&res, pt);
        }
        sim_results_free(&res);
    }
    scenario_free(&sc);
    return rc;
}

int exp_run_point(const char *path, const char *const *sets, size_t n_sets,
                  struct exp_point *pt, char *err, size_t errlen)
{
    return exp_run(path, sets, n_sets, false, pt, err, errlen);
}

int exp_check_steady(const char *path, const char *const *sets, size_t n_sets,
                     struct exp_point *pt, char *err, size_t errlen)
{
    struct exp_point h;
    memset(&h, 0, sizeof h);
    if (exp_run(path, sets, n_sets, true, &h, err, errlen))
        return -1;
    const double *m = pt->m;
    double whole = exp_div(m[EXP_M_MPPS], m[EXP_M_OFFERED_MPPS]);
    pt->half_delivered = exp_div(h.m[EXP_M_MPPS], h.m[EXP_M_OFFERED_MPPS]);
    pt->half_emc = h.m[EXP_M_EMC];
    pt->half_smc = h.m[EXP_M_SMC];
    bool ok = fabs(pt->half_delivered - whole) <= EXP_STEADY_RATE_TOL * whole &&
              fabs(pt->half_emc - m[EXP_M_EMC]) <= EXP_STEADY_SHARE_TOL &&
              fabs(pt->half_smc - m[EXP_M_SMC]) <= EXP_STEADY_SHARE_TOL;
    pt->steady = ok ? EXP_STEADY_YES : EXP_STEADY_NO;
    return 0;
}

/* ---- files ----------------------------------------------------------------------------- */

char *exp_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 0, n = 0;
    char *buf = NULL;
    for (;;) {
        /* Room for one more byte and the NUL. */
        if (fs_grow((void **)&buf, &cap, n + 2, 1, 4096)) {
            free(buf);
            buf = NULL;
            break;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0)
            break;
    }
    fclose(f);
    if (buf)
        buf[n] = '\0';
    return buf;
}

static FILE *exp_open(const char *dir, const char *name, char *path, size_t size, char *err,
                      size_t errlen)
{
    if (snprintf(path, size, "%s/%s", dir, name) >= (int)size) {
        fs_errf(err, errlen, "%s: path too long", dir);
        return NULL;
    }
    FILE *f = fopen(path, "w");
    if (!f)
        fs_errf(err, errlen, "%s: %s", path, strerror(errno));
    return f;
}

static int exp_close(FILE *f, const char *path, char *err, size_t errlen)
{
    bool bad = ferror(f);
    if (fclose(f) || bad) {
        fs_errf(err, errlen, "%s: write error", path);
        return -1;
    }
    return 0;
}

static void exp_csv_field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static int exp_write_csv(const struct exp_table *t, const char *dir, char *err, size_t errlen)
{
    char path[4096];
    FILE *f = exp_open(dir, "data.csv", path, sizeof path, err, errlen);
    if (!f)
        return -1;
    for (unsigned k = 0; k < t->n_params; k++) {
        exp_csv_field(f, t->param_name[k]);
        fputc(',', f);
    }
    for (int m = 0; m < EXP_M_N; m++)
        fprintf(f, "%s%s", exp_metric_name((enum exp_metric)m), m + 1 < EXP_M_N ? "," : "\n");
    for (size_t i = 0; i < t->n_points; i++) {
        const struct exp_point *p = &t->points[i];
        for (unsigned k = 0; k < t->n_params; k++) {
            exp_csv_field(f, p->param[k]);
            fputc(',', f);
        }
        for (int m = 0; m < EXP_M_N; m++)
            fprintf(f, "%.6g%s", p->m[m], m + 1 < EXP_M_N ? "," : "\n");
    }
    return exp_close(f, path, err, errlen);
}

/* A metric's description on r's page ("relative" as the page defines it). */
static const char *exp_desc(const struct exp_report *r, enum exp_metric m)
{
    return m == EXP_M_REL && r->rel_desc ? r->rel_desc : exp_metric_desc(m);
}

static double exp_pub_ratio(const struct exp_pub *p)
{
    return p->published != 0 ? p->ours / p->published : NAN;
}

static bool exp_pub_close(const struct exp_pub *p)
{
    return fabs(exp_pub_ratio(p) - 1) <= EXP_PUB_OFF;
}

/* data.json's "published": each published figure against ours. */
static json_t *exp_pubs_json(const struct exp_report *r)
{
    json_t *a = json_array();
    for (size_t i = 0; i < r->n_pubs; i++) {
        const struct exp_pub *p = &r->pubs[i];
        double ratio = exp_pub_ratio(p);
        json_array_append_new(
            a, json_pack("{s:s, s:s, s:s, s:f, s:f, s:o, s:b, s:s}", "what", p->what, "source",
                         p->source, "unit", p->unit, "published", p->published, "ours", p->ours,
                         "ratio", isfinite(ratio) ? json_real(ratio) : json_null(),
                         "within_25pct", exp_pub_close(p), "reason", p->reason));
    }
    return a;
}

static int exp_write_json(const struct exp_report *r, const char *dir, char *err,
                          size_t errlen)
{
    const struct exp_table *t = r->table;
    json_t *pts = json_array();
    for (size_t i = 0; i < t->n_points; i++) {
        const struct exp_point *p = &t->points[i];
        json_t *params = json_object(), *mets = json_object(), *cdf = json_array();
        for (unsigned k = 0; k < t->n_params; k++)
            json_object_set_new(params, t->param_name[k], json_string(p->param[k]));
        for (int m = 0; m < EXP_M_N; m++)
            json_object_set_new(mets, exp_metric_name((enum exp_metric)m), json_real(p->m[m]));
        for (unsigned k = 0; k < p->n_cdf; k++)
            json_array_append_new(cdf, json_pack("[f, f]", p->cdf_us[k], p->cdf_p[k]));
        json_t *pj = json_pack("{s:o, s:o, s:o}", "params", params, "metrics", mets,
                               "latency_cdf_us", cdf);
        if (p->steady != EXP_STEADY_UNCHECKED)
            json_object_set_new(pj, "steady",
                                json_pack("{s:s, s:f, s:f, s:f}", "steady",
                                          p->steady == EXP_STEADY_YES ? "yes" : "no",
                                          "half_window_delivered_share", p->half_delivered,
                                          "half_window_emc_share", p->half_emc,
                                          "half_window_smc_share", p->half_smc));
        json_array_append_new(pts, pj);
    }
    json_t *units = json_object();
    for (int m = 0; m < EXP_M_N; m++)
        json_object_set_new(units, exp_metric_name((enum exp_metric)m),
                            json_pack("{s:s, s:s}", "unit", exp_metric_unit((enum exp_metric)m),
                                      "what", exp_desc(r, (enum exp_metric)m)));
    json_t *doc = json_pack("{s:s, s:s, s:s, s:o, s:o, s:o}", "flowswitch", FS_VERSION, "name",
                            r->name, "command", r->command ? r->command : "", "metrics", units,
                            "published", exp_pubs_json(r), "points", pts);
    char path[4096];
    snprintf(path, sizeof path, "%s/data.json", dir);
    int rc = json_dump_file(doc, path, JSON_INDENT(1) | JSON_PRESERVE_ORDER |
                                           JSON_REAL_PRECISION(8));
    json_decref(doc);
    if (rc)
        fs_errf(err, errlen, "%s: cannot write", path);
    return rc ? -1 : 0;
}

/* ---- plots ------------------------------------------------------------------------------- */

/* A gnuplot string literal. */
static void exp_gp_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static bool exp_where(const struct exp_plot *pl, const struct exp_point *p)
{
    for (int k = 0; k < EXP_PARAMS_MAX; k++)
        if (pl->where[k] && strcmp(pl->where[k], p->param[k]))
            return false;
    return true;
}

static void exp_series_key(const struct exp_plot *pl, const struct exp_table *t,
                           const struct exp_point *p, char *buf, size_t size)
{
    buf[0] = '\0';
    size_t n = 0;
    for (int s = 0; s < 2; s++) {
        int k = pl->series[s] - 1;
        if (k < 0 || (unsigned)k >= t->n_params)
            continue;
        n += (size_t)snprintf(buf + n, n < size ? size - n : 0, "%s%s=%s", n ? ", " : "",
                              t->param_name[k], p->param[k]);
    }
    if (!buf[0])
        snprintf(buf, size, "%s", pl->series_title ? pl->series_title
                                                   : exp_metric_desc(pl->metric));
}

/* A bar plot's category of a point: its x parameter, joined to x2's. */
static void exp_category(const struct exp_plot *pl, const struct exp_table *t,
                         const struct exp_point *p, char *buf, size_t size)
{
    int k2 = pl->x2 - 1;
    if (k2 >= 0 && (unsigned)k2 < t->n_params)
        snprintf(buf, size, "%s / %s", p->param[pl->x_param], p->param[k2]);
    else
        snprintf(buf, size, "%s", p->param[pl->x_param]);
}

/* Series s of a plot: the figure it plots and the point's series key
 * it must have (NULL: any, for figure series). */
static enum exp_metric exp_series_metric(const struct exp_plot *pl, size_t s)
{
    return pl->n_metrics ? pl->metrics[s] : pl->metric;
}

/* The distinct series keys (and, for bars, x categories) of a plot, in
 * order of appearance. */
struct exp_keys {
    char (*v)[160];
    size_t n, cap;
};

static int exp_keys_add(struct exp_keys *k, const char *s)
{
    for (size_t i = 0; i < k->n; i++)
        if (!strcmp(k->v[i], s))
            return (int)i;
    if (fs_grow((void **)&k->v, &k->cap, k->n + 1, sizeof *k->v, 16))
        return -1;
    snprintf(k->v[k->n], sizeof k->v[k->n], "%s", s);
    return (int)k->n++;
}

static int exp_cmp_xy(const void *a, const void *b)
{
    const double *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* The script of one plot, data inline, no terminal (the caller's -e). */
static int exp_gp_body(FILE *f, const struct exp_plot *pl, const struct exp_table *t)
{
    double scale = pl->y_scale ? pl->y_scale : 1;
    fprintf(f, "# %s: flowswitch %s; render with\n", pl->file, FS_VERSION);
    fprintf(f, "#   gnuplot -e 'set terminal svg; set output \"%s.svg\"' %s.gp\n", pl->file,
            pl->file);
    fputs("set title ", f);
    exp_gp_str(f, pl->title);
    fputs(" noenhanced\nset xlabel ", f);
    exp_gp_str(f, pl->kind == EXP_PLOT_CDF ? "latency (us)" : pl->xlabel);
    fputs(" noenhanced\nset ylabel ", f);
    exp_gp_str(f, pl->kind == EXP_PLOT_CDF ? "share of packets at or below" : pl->ylabel);
    fputs(" noenhanced\nset grid\nset key below noenhanced\n"
          "set datafile missing '?'\n", f);
    if (pl->logx || pl->kind == EXP_PLOT_CDF)
        fputs("set logscale x 10\nset format x '%g'\n", f);
    if (pl->logy)
        fputs("set logscale y 10\n", f);
    struct exp_keys series = {0}, cats = {0};
    char key[160], cat[160];
    int rc = 0;
    const bool by_metric = pl->n_metrics > 0;
    for (size_t m = 0; by_metric && m < pl->n_metrics && rc == 0; m++)
        if (exp_keys_add(&series, exp_metric_desc(pl->metrics[m])) < 0)
            rc = -1;
    bool any = false;
    for (size_t i = 0; i < t->n_points && rc == 0; i++) {
        const struct exp_point *p = &t->points[i];
        if (!exp_where(pl, p))
            continue;
        any = true;
        exp_series_key(pl, t, p, key, sizeof key);
        exp_category(pl, t, p, cat, sizeof cat);
        if ((!by_metric && exp_keys_add(&series, key) < 0) ||
            (pl->kind == EXP_PLOT_BARS && exp_keys_add(&cats, cat) < 0))
            rc = -1;
    }
    if (rc == 0 && (series.n == 0 || !any))
        rc = -2;
    if (rc == 0 && pl->kind == EXP_PLOT_BARS) {
        fputs("$D << EOD\n", f);
        for (size_t c = 0; c < cats.n; c++) {
            exp_gp_str(f, cats.v[c]);
            for (size_t s = 0; s < series.n; s++) {
                const struct exp_point *hit = NULL;
                for (size_t i = 0; i < t->n_points && !hit; i++) {
                    const struct exp_point *p = &t->points[i];
                    exp_series_key(pl, t, p, key, sizeof key);
                    exp_category(pl, t, p, cat, sizeof cat);
                    if (exp_where(pl, p) && !strcmp(cat, cats.v[c]) &&
                        (by_metric || !strcmp(key, series.v[s])))
                        hit = p;
                }
                if (hit)
                    fprintf(f, " %.6g", hit->m[exp_series_metric(pl, s)] * scale);
                else
                    fputs(" ?", f);
            }
            fputc('\n', f);
        }
        fputs("EOD\n", f);
        /* Figures of one point stack (they share its packets); series of
         * points stand side by side. */
        fprintf(f, "set style data histograms\nset style histogram %s\n"
                   "set style fill solid 0.85 border -1\nset boxwidth %s\nset yrange [0:*]\n"
                   "set xtics rotate by 25 right noenhanced\n",
                by_metric ? "rowstacked" : "clustered gap 1", by_metric ? "0.6" : "0.9");
        fprintf(f, "set xrange [-0.6:%zu.6]\n", cats.n - 1);
    } else if (rc == 0) {
        for (size_t s = 0; s < series.n; s++) {
            fprintf(f, "$S%zu << EOD\n", s);
            size_t cap = t->n_points * EXP_CDF_POINTS + 1, n = 0;
            double *xy = malloc(cap * 2 * sizeof *xy);
            if (!xy) {
                rc = -1;
                break;
            }
            for (size_t i = 0; i < t->n_points; i++) {
                const struct exp_point *p = &t->points[i];
                exp_series_key(pl, t, p, key, sizeof key);
                if (!exp_where(pl, p) || (!by_metric && strcmp(key, series.v[s])))
                    continue;
                if (pl->kind == EXP_PLOT_CDF) {
                    for (unsigned k = 0; k < p->n_cdf; k++) {
                        xy[2 * n] = p->cdf_us[k] > 0 ? p->cdf_us[k] : 1e-3;
                        xy[2 * n + 1] = p->cdf_p[k];
                        n++;
                    }
                } else {
                    xy[2 * n] = atof(p->param[pl->x_param]);
                    xy[2 * n + 1] = p->m[exp_series_metric(pl, s)] * scale;
                    n++;
                }
            }
            if (pl->kind != EXP_PLOT_CDF)
                qsort(xy, n, 2 * sizeof *xy, exp_cmp_xy);
            for (size_t i = 0; i < n; i++)
                fprintf(f, "%.6g %.6g\n", xy[2 * i], xy[2 * i + 1]);
            free(xy);
            fputs("EOD\n", f);
        }
        if (pl->kind == EXP_PLOT_CDF)
            fputs("set yrange [0:1.02]\n", f);
    }
    if (rc == 0 && pl->n_refs) {
        fputs("$R << EOD\n", f);
        for (size_t i = 0; i < pl->n_refs; i++) {
            double x = pl->refs[i].x;
            if (pl->kind == EXP_PLOT_BARS && pl->refs[i].cat) {
                x = NAN;
                for (size_t c = 0; c < cats.n; c++)
                    if (!strcmp(cats.v[c], pl->refs[i].cat))
                        x = (double)c;
            }
            if (!isnan(x))
                fprintf(f, "%.6g %.6g\n", x, pl->refs[i].y);
        }
        fputs("EOD\n", f);
    }
    if (rc == 0 && pl->vline > 0) {
        fprintf(f, "set arrow from %.6g, graph 0 to %.6g, graph 1 nohead dt 2 lw 2 lc "
                   "rgb 'gray40'\n", pl->vline, pl->vline);
        if (pl->vline_label) {
            fprintf(f, "set label ");
            exp_gp_str(f, pl->vline_label);
            fprintf(f, " at %.6g, graph 0.96 offset 0.5,0 noenhanced\n", pl->vline);
        }
    }
    if (rc == 0) {
        fputs("plot ", f);
        for (size_t s = 0; s < series.n; s++) {
            if (pl->kind == EXP_PLOT_BARS)
                fprintf(f, "%s using %zu%s title ", s ? "''" : "$D", s + 2,
                        s ? "" : ":xtic(1)");
            else
                fprintf(f, "$S%zu using 1:2 with %s lw 2 title ", s,
                        pl->kind == EXP_PLOT_CDF ? "lines" : "linespoints pt 7 ps 0.8");
            exp_gp_str(f, series.v[s]);
            fputs(" noenhanced", f);
            if (s + 1 < series.n || pl->n_refs)
                fputs(", \\\n     ", f);
        }
        if (pl->n_refs) {
            fputs("$R using 1:2 with points pt 13 ps 2.2 lc rgb 'black' title ", f);
            exp_gp_str(f, pl->ref_title ? pl->ref_title : "published figure");
            fputs(" noenhanced", f);
        }
        fputc('\n', f);
    }
    free(series.v);
    free(cats.v);
    return rc;
}

/* Runs gnuplot on script with a terminal: the output file must appear. */
static int exp_gnuplot(const char *dir, const char *script, const char *term, const char *out,
                       char *err, size_t errlen)
{
    char setup[8192], logpath[4096];
    snprintf(setup, sizeof setup, "%s; set output '%s/%s'", term, dir, out);
    snprintf(logpath, sizeof logpath, "%s/.gnuplot.log", dir);
    pid_t pid = fork();
    if (pid < 0) {
        fs_errf(err, errlen, "fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        FILE *log = freopen(logpath, "w", stderr);
        (void)log;
        if (!freopen("/dev/null", "w", stdout))
            _exit(126);
        execlp("gnuplot", "gnuplot", "-e", setup, script, (char *)NULL);
        fprintf(stderr, "gnuplot: %s\n", strerror(errno));
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    char outpath[4096];
    snprintf(outpath, sizeof outpath, "%s/%s", dir, out);
    struct stat sb;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || stat(outpath, &sb) || sb.st_size == 0) {
        char *log = exp_read_file(logpath);
        if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
            fs_errf(err, errlen, "gnuplot not found (scripts/install-deps installs "
                                 "gnuplot-nox)");
        else
            fs_errf(err, errlen, "gnuplot failed on %s: %.300s", script, log ? log : "");
        free(log);
        return -1;
    }
    unlink(logpath);
    return 0;
}

static int exp_write_plot(const struct exp_plot *pl, const struct exp_table *t,
                          const char *dir, char *err, size_t errlen)
{
    char path[4096], name[256];
    snprintf(name, sizeof name, "%s.gp", pl->file);
    FILE *f = exp_open(dir, name, path, sizeof path, err, errlen);
    if (!f)
        return -1;
    int rc = exp_gp_body(f, pl, t);
    if (exp_close(f, path, err, errlen))
        return -1;
    if (rc == -2) {
        fs_errf(err, errlen, "plot %s: no point to plot", pl->file);
        return -1;
    }
    if (rc) {
        fs_errf(err, errlen, "out of memory");
        return -1;
    }
    char out[300];
    snprintf(out, sizeof out, "%s.svg", pl->file);
    if (exp_gnuplot(dir, path,
                    "set terminal svg size 960,540 dynamic font 'sans,13' background "
                    "rgb 'white'", out, err, errlen))
        return -1;
    snprintf(out, sizeof out, "%s.png", pl->file);
    return exp_gnuplot(dir, path,
                       "set terminal pngcairo size 960,540 font 'sans,11' background "
                       "rgb 'white'", out, err, errlen);
}

/* ---- the page ------------------------------------------------------------------------------ */

static void exp_html_text(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        default:
            fputc(*s, f);
        }
    }
}

static void exp_html_para(FILE *f, const char *tag, const char *s)
{
    if (!s)
        return;
    fprintf(f, "<%s>", tag);
    exp_html_text(f, s);
    fprintf(f, "</%s>\n", tag);
}

/* The table "Published figures against this run": each published figure,
 * ours, their ratio, and where they differ by more than EXP_PUB_OFF the
 * reason, measured. */
static void exp_html_pubs(FILE *f, const struct exp_report *r)
{
    if (!r->n_pubs)
        return;
    fputs("<h2>Published figures against this run</h2>\n<table>\n<tr><th>figure</th>"
          "<th>published</th><th>this run</th><th>ratio</th><th>source</th>"
          "<th>why they differ (where off by more than 25%)</th></tr>\n", f);
    for (size_t i = 0; i < r->n_pubs; i++) {
        const struct exp_pub *p = &r->pubs[i];
        fputs("<tr><td class=\"p\">", f);
        exp_html_text(f, p->what);
        fprintf(f, "</td><td>%.4g %s</td><td>%.4g %s</td><td>%.3g</td><td class=\"p\">",
                p->published, p->unit, p->ours, p->unit, exp_pub_ratio(p));
        exp_html_text(f, p->source);
        fputs("</td><td class=\"p\">", f);
        exp_html_text(f, exp_pub_close(p) ? "within 25%" : p->reason);
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

/* The steady-state column of the results table, if any point was checked. */
static bool exp_any_steady(const struct exp_table *t)
{
    for (size_t i = 0; i < t->n_points; i++)
        if (t->points[i].steady != EXP_STEADY_UNCHECKED)
            return true;
    return false;
}

static int exp_write_html(const struct exp_report *r, const char *dir, char *err,
                          size_t errlen)
{
    char path[4096];
    FILE *f = exp_open(dir, "index.html", path, sizeof path, err, errlen);
    if (!f)
        return -1;
    const struct exp_table *t = r->table;
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>", f);
    exp_html_text(f, r->title);
    fputs("</title>\n<style>\n"
          "body { font-family: sans-serif; max-width: 1100px; margin: 1.5em auto; "
          "padding: 0 1em; color: #222; background: #fff; line-height: 1.4; }\n"
          "h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; margin-top: 1.6em; }\n"
          "table { border-collapse: collapse; font-size: 0.85em; }\n"
          "th, td { border: 1px solid #bbb; padding: 0.2em 0.5em; text-align: right; }\n"
          "th { background: #eef; } td.p { text-align: left; }\n"
          "pre { background: #f6f6f6; padding: 0.6em; overflow-x: auto; font-size: 0.85em; }\n"
          "figure { margin: 1em 0; } img { max-width: 100%; height: auto; "
          "border: 1px solid #ddd; }\n"
          "figcaption { font-size: 0.9em; color: #444; }\n"
          "</style>\n</head>\n<body>\n", f);
    exp_html_para(f, "h1", r->title);
    exp_html_para(f, "p", r->summary);
    if (r->reading) {
        fputs("<h2>How to read it</h2>\n", f);
        exp_html_para(f, "p", r->reading);
    }
    if (r->n_refs) {
        fputs("<h2>Published reference</h2>\n<ul>\n", f);
        for (size_t i = 0; i < r->n_refs; i++) {
            fputs("<li>", f);
            exp_html_text(f, r->refs[i].name);
            if (r->refs[i].text) {
                fputs(" <a href=\"", f);
                exp_html_text(f, r->refs[i].text);
                fputs("\">", f);
                exp_html_text(f, r->refs[i].text);
                fputs("</a>", f);
            }
            fputs("</li>\n", f);
        }
        fputs("</ul>\n", f);
    }
    if (r->findings) {
        fputs("<h2>What this run shows</h2>\n", f);
        exp_html_para(f, "p", r->findings);
    }
    exp_html_pubs(f, r);
    fputs("<h2>Plots</h2>\n", f);
    for (size_t i = 0; i < r->n_plots; i++) {
        const struct exp_plot *pl = &r->plots[i];
        fprintf(f, "<figure id=\"%s\">\n<img src=\"%s.png\" width=\"960\" height=\"540\" "
                   "alt=\"", pl->file, pl->file);
        exp_html_text(f, pl->title);
        fputs("\">\n<figcaption>", f);
        exp_html_text(f, pl->caption ? pl->caption : pl->title);
        fprintf(f, " (<a href=\"%s.svg\">SVG</a>, <a href=\"%s.gp\">gnuplot script with "
                   "its data</a>)</figcaption>\n</figure>\n", pl->file, pl->file);
    }
    fputs("<h2>Results</h2>\n<table>\n<tr>", f);
    for (unsigned k = 0; k < t->n_params; k++) {
        fputs("<th>", f);
        exp_html_text(f, t->param_name[k]);
        fputs("</th>", f);
    }
    for (size_t c = 0; c < r->n_columns; c++) {
        fputs("<th title=\"", f);
        exp_html_text(f, exp_desc(r, r->columns[c]));
        fputs("\">", f);
        exp_html_text(f, exp_metric_name(r->columns[c]));
        const char *u = exp_metric_unit(r->columns[c]);
        if (*u) {
            fputs("<br>(", f);
            exp_html_text(f, u);
            fputs(")", f);
        }
        fputs("</th>", f);
    }
    const bool steady = exp_any_steady(t);
    if (steady)
        fputs("<th title=\"the window's first half against the whole\">steady</th>", f);
    fputs("</tr>\n", f);
    for (size_t i = 0; i < t->n_points; i++) {
        const struct exp_point *p = &t->points[i];
        fputs("<tr>", f);
        for (unsigned k = 0; k < t->n_params; k++) {
            fputs("<td class=\"p\">", f);
            exp_html_text(f, p->param[k]);
            fputs("</td>", f);
        }
        for (size_t c = 0; c < r->n_columns; c++)
            fprintf(f, "<td>%.4g</td>", p->m[r->columns[c]]);
        if (steady)
            fprintf(f, "<td>%s</td>", p->steady == EXP_STEADY_YES ? "yes"
                                      : p->steady == EXP_STEADY_NO ? "no" : "");
        fputs("</tr>\n", f);
    }
    fputs("</table>\n<p>Every figure of every point: <a href=\"data.csv\">data.csv</a>, "
          "<a href=\"data.json\">data.json</a> (with the latency CDFs). Rates and cache "
          "shares are over each run's measurement window; checksums per packet received and "
          "send calls over the whole run.</p>\n", f);
    if (steady)
        fprintf(f, "<p>Steady: each point rerun over the first half of its window; yes when "
                   "the delivered share of the offered packets over that half is within "
                   "%.1f%% of the whole window's and the EMC and SMC hit shares within %.2f "
                   "(the halves then differ by at most twice that).</p>\n",
                100 * EXP_STEADY_RATE_TOL, EXP_STEADY_SHARE_TOL);
    fputs("<h2>Scenarios</h2>\n", f);
    for (size_t i = 0; i < r->n_scenarios; i++) {
        exp_html_para(f, "h3", r->scenarios[i].name);
        exp_html_para(f, "pre", r->scenarios[i].text);
    }
    fputs("<h2>Cost profile</h2>\n", f);
    exp_html_para(f, "pre", r->profile_text ? r->profile_text : "(the built-in default)");
    fputs("<h2>Command</h2>\n", f);
    exp_html_para(f, "pre", r->command);
    fprintf(f, "<p><small>flowswitch %s: deterministic simulations; the same command gives "
               "the same page.</small></p>\n</body>\n</html>\n", FS_VERSION);
    return exp_close(f, path, err, errlen);
}

int exp_write_report(const struct exp_report *r, const char *dir, char *err, size_t errlen)
{
    int rc = fs_mkdir_p(dir);
    if (rc) {
        fs_errf(err, errlen, "%s: %s", dir, strerror(-rc));
        return -1;
    }
    if (exp_write_csv(r->table, dir, err, errlen) || exp_write_json(r, dir, err, errlen))
        return -1;
    for (size_t i = 0; i < r->n_plots; i++)
        if (exp_write_plot(&r->plots[i], r->table, dir, err, errlen))
            return -1;
    return exp_write_html(r, dir, err, errlen);
}
