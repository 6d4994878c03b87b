/* sweep.c: `flowswitch sim --sweep KEY=V1,V2,... [--sweep KEY2=...]`: a
 * scenario simulated over the grid of one or two settings (sweep.h). */
#include "sweep.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exp.h"
#include "jobs.h"
#include "scenario.h"
#include "sys.h"
#include "util.h"

#define SWEEP_VALUES_MAX 64
#define SWEEP_SETS_MAX 80     /* the --set a sweep takes (simcmd.c: 64 and --seed) */

struct sweep_key {
    char key[EXP_PARAM_LEN];
    char vals[SWEEP_VALUES_MAX][EXP_PARAM_LEN];
    size_t n;
    bool numeric;           /* every value a number */
    double lo, hi;          /* of the numeric values */
};

/* "KEY=V1,V2,..." (';' separates instead when the list holds one, for
 * values with commas such as caps lists). */
static int sweep_parse(const char *spec, struct sweep_key *k, char *err, size_t errlen)
{
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec || (size_t)(eq - spec) >= sizeof k->key || !eq[1]) {
        fs_errf(err, errlen, "--sweep %s: expected SECTION.KEY=V1,V2,...", spec);
        return -1;
    }
    memset(k, 0, sizeof *k);
    memcpy(k->key, spec, (size_t)(eq - spec));
    char sep = strchr(eq + 1, ';') ? ';' : ',';
    k->numeric = true;
    k->lo = INFINITY;
    for (const char *v = eq + 1; *v;) {
        const char *end = strchr(v, sep);
        size_t len = end ? (size_t)(end - v) : strlen(v);
        if (len == 0 || len >= EXP_PARAM_LEN || k->n == SWEEP_VALUES_MAX) {
            fs_errf(err, errlen, "--sweep %s: %s", spec,
                    len == 0 ? "an empty value" : k->n == SWEEP_VALUES_MAX
                                                      ? "more than 64 values"
                                                      : "a value too long");
            return -1;
        }
        memcpy(k->vals[k->n], v, len);
        char *num_end;
        double d = strtod(k->vals[k->n], &num_end);
        if (*num_end || num_end == k->vals[k->n]) {
            k->numeric = false;
        } else {
            k->lo = fmin(k->lo, d);
            k->hi = fmax(k->hi, d);
        }
        k->n++;
        v += len + (end ? 1 : 0);
    }
    return 0;
}

static const enum exp_metric sweep_cols[] = {
    EXP_M_OFFERED_MPPS, EXP_M_MPPS, EXP_M_GBPS, EXP_M_RX_MISSED, EXP_M_EMC, EXP_M_SMC,
    EXP_M_MEGAFLOW, EXP_M_UPCALL, EXP_M_CS_EGRESS, EXP_M_PKTS_PER_SEND, EXP_M_LAT_P50,
    EXP_M_LAT_P99, EXP_M_LAT_P999, EXP_M_BUSY};
static const enum exp_metric sweep_hits[] = {EXP_M_EMC, EXP_M_SMC, EXP_M_MEGAFLOW,
                                             EXP_M_UPCALL};

/* What a point needs to run: the scenario, the caller's --set and the
 * swept keys (a point's values are its parameters in the table). */
struct sweep_run {
    const char *scenario;
    const char *const *sets;
    size_t n_sets;
    const struct sweep_key *keys;
    size_t n_keys;
    const struct exp_table *t;
};

/* The overrides of point i: the caller's, then "KEY=VALUE" per swept key
 * into setbuf. all has room for n_sets + 2. */
static void sweep_point_sets(const struct sweep_run *r, size_t i, const char **all,
                             char setbuf[2][2 * EXP_PARAM_LEN + 2])
{
    for (size_t k = 0; k < r->n_sets; k++)
        all[k] = r->sets[k];
    for (size_t k = 0; k < r->n_keys; k++) {
        snprintf(setbuf[k], sizeof setbuf[k], "%s=%s", r->keys[k].key,
                 r->t->points[i].param[k]);
        all[r->n_sets + k] = setbuf[k];
    }
}

/* Loads the scenario of every point before any runs: a swept value the
 * scenario refuses is a scenario error (exit 1), named with its point. */
static int sweep_check_points(const struct sweep_run *r, char *err, size_t errlen)
{
    for (size_t i = 0; i < r->t->n_points; i++) {
        const char *all[SWEEP_SETS_MAX + 2];
        char setbuf[2][2 * EXP_PARAM_LEN + 2], name[4 * EXP_PARAM_LEN + 8], why[2048];
        struct scenario sc;
        sweep_point_sets(r, i, all, setbuf);
        if (scenario_load(r->scenario, all, r->n_sets + r->n_keys, &sc, why, sizeof why)) {
            jobs_point_name(r->t, i, name, sizeof name);
            fs_errf(err, errlen, "point %zu (%s): %s", i, name, why);
            return -1;
        }
        scenario_free(&sc);
    }
    return 0;
}

/* The table's points, one per combination (the second key varying
 * fastest), parameters set. */
static int sweep_points(struct exp_table *t, const struct sweep_key *keys, size_t n_keys)
{
    size_t n2 = n_keys > 1 ? keys[1].n : 1;
    for (size_t a = 0; a < keys[0].n; a++) {
        for (size_t b = 0; b < n2; b++) {
            const size_t idx[2] = {a, b};
            struct exp_point *pt = exp_table_add(t);
            if (!pt)
                return -1;
            for (size_t k = 0; k < n_keys; k++)
                snprintf(pt->param[k], sizeof pt->param[k], "%s", keys[k].vals[idx[k]]);
        }
    }
    return 0;
}

/* A sweep's grid before or after it runs: the keys, the table (one
 * point per combination), the scenario's text and profile for the page. */
struct sweep_plan {
    struct sweep_key keys[2];
    size_t n_keys;
    struct exp_table t;
    char *profile, *text;
};

static void sweep_plan_free(struct sweep_plan *p)
{
    exp_table_free(&p->t);
    free(p->profile);
    free(p->text);
}

/* Parses the swept keys, loads the scenario and every point's scenario
 * (their errors before any point runs). Returns 0, or 1 (a usage or
 * scenario error, printed). */
static int sweep_plan(struct sweep_plan *p, const char *scenario, const char *const *sets,
                      size_t n_sets, const char *const *specs, size_t n_specs)
{
    char err[4096];
    memset(p, 0, sizeof *p);
    if (n_specs < 1 || n_specs > 2 || n_sets > SWEEP_SETS_MAX) {
        fprintf(stderr, "flowswitch sim: --sweep takes one or two keys\n");
        return 1;
    }
    p->n_keys = n_specs;
    for (size_t i = 0; i < n_specs; i++) {
        if (sweep_parse(specs[i], &p->keys[i], err, sizeof err)) {
            fprintf(stderr, "flowswitch sim: %s\n", err);
            return 1;
        }
    }
    struct scenario sc;
    if (scenario_load(scenario, sets, n_sets, &sc, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    if (strcmp(sc.profile, "default"))
        p->profile = exp_read_file(sc.profile);
    scenario_free(&sc);
    p->t.n_params = (unsigned)n_specs;
    for (size_t i = 0; i < n_specs; i++)
        p->t.param_name[i] = p->keys[i].key;
    struct sweep_run run = {scenario, sets, n_sets, p->keys, n_specs, &p->t};
    if (sweep_points(&p->t, p->keys, n_specs) || sweep_check_points(&run, err, sizeof err)) {
        fprintf(stderr, "flowswitch sim --sweep: %s\n", p->t.n_points ? err : "out of memory");
        sweep_plan_free(p);
        return 1;
    }
    p->text = exp_read_file(scenario);
    return 0;
}

/* Writes the page of a plan whose points ran. Returns 0 or 2. */
static int sweep_report(struct sweep_plan *p, const char *scenario, const char *out_dir,
                        const char *command)
{
    char err[4096];
    const struct sweep_key *keys = p->keys;
    size_t n_specs = p->n_keys;
    struct exp_table t = p->t;
    const char *profile = p->profile, *text = p->text;
    int rc = 0;
    /* Plots: against the first key (numeric: lines, a log axis when it
     * spans two decades; else bars), one series per value of the second. */
    const struct sweep_key *k0 = &keys[0];
    bool lines = k0->numeric;
    bool logx = lines && k0->lo > 0 && k0->hi / k0->lo >= 100;
    enum exp_plot_kind kind = lines ? EXP_PLOT_LINES : EXP_PLOT_BARS;
    int series = n_specs > 1 ? EXP_P(1) : 0;
    char titles[4][256];
    snprintf(titles[0], sizeof titles[0], "Delivered rate vs %s", k0->key);
    snprintf(titles[1], sizeof titles[1], "Lookups answered per stage vs %s", k0->key);
    snprintf(titles[2], sizeof titles[2], "99th percentile latency vs %s", k0->key);
    snprintf(titles[3], sizeof titles[3], "Latency CDFs");
    struct exp_plot plots[4] = {
        {.file = "throughput", .title = titles[0], .xlabel = k0->key, .ylabel = "Mpps",
         .kind = kind, .series = {series}, .metric = EXP_M_MPPS, .logx = logx,
         .caption = "Packets per second delivered in the measurement window."},
        {.file = "hits", .title = titles[1], .xlabel = k0->key, .ylabel = "share of lookups",
         .kind = kind, .metrics = sweep_hits, .n_metrics = 4, .logx = logx,
         .where = {[1] = n_specs > 1 ? keys[1].vals[0] : NULL},
         .caption = n_specs > 1 ? "Which cache stage answers (at the first value of the "
                                  "second key)."
                                : "Which cache stage answers."},
        {.file = "latency-p99", .title = titles[2], .xlabel = k0->key, .ylabel = "us",
         .kind = kind, .series = {series}, .metric = EXP_M_LAT_P99, .logx = logx,
         .caption = "Latency (arrival to departure, virtual time) of the window's packets."},
        {.file = "latency-cdf", .title = titles[3], .kind = EXP_PLOT_CDF,
         .series = {EXP_P(0), series},
         .caption = "Latency distribution of every point."},
    };
    struct exp_text scen = {scenario, text ? text : "(unreadable)"};
    struct exp_report r = {
        .name = "sweep",
        .title = titles[0],
        .summary = "A sweep: the scenario below simulated once per combination of the "
                   "swept settings (the parameters of the table), every other setting as "
                   "written. Deterministic: the same command gives the same page.",
        .reading = "Rates, cache shares and latency are over each run's measurement window "
                   "(the scenario's [sim] warmup to its duration).",
        .table = &t,
        .columns = sweep_cols,
        .n_columns = sizeof sweep_cols / sizeof sweep_cols[0],
        .plots = plots,
        .n_plots = t.n_points <= 16 ? 4 : 3,
        .scenarios = &scen,
        .n_scenarios = 1,
        .profile_text = profile,
        .command = command,
    };
    char title[300];
    snprintf(title, sizeof title, "sweep of %s over %s%s%s", scenario, keys[0].key,
             n_specs > 1 ? " and " : "", n_specs > 1 ? keys[1].key : "");
    r.title = title;
    if (rc == 0)
        rc = exp_write_report(&r, out_dir, err, sizeof err);
    if (rc)
        fprintf(stderr, "flowswitch sim --sweep: %s\n", err);
    else
        printf("sweep: %zu simulations; report: %s/index.html\n", t.n_points, out_dir);
    return rc ? 2 : 0;
}

/* ---- one command per point, and their merge ------------------------------------------ */

/* Appends s to f in single quotes (a POSIX shell word). */
static void sweep_quote(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'')
            fputs("'\\''", f);
        else
            fputc(*s, f);
    }
    fputc('\'', f);
}

static json_t *sweep_strings(const char *const *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

/* DIR/commands.sh (one line per point, for GNU parallel or a job array:
 * each runs in the sweep's working directory and writes
 * DIR/points/N.json) and DIR/sweep.json (what 'sim merge' needs to make
 * the page). Returns 0, or 1 (printed). */
static int sweep_emit(const struct sweep_plan *p, const char *scenario,
                      const char *const *sets, size_t n_sets, const char *const *specs,
                      size_t n_specs, const char *out_dir, const char *command,
                      const char *dir)
{
    char path[4400], bin[4096], cwd[4096], *abs = NULL;
    snprintf(path, sizeof path, "%s/points", dir);
    int rc = fs_mkdir_p(path);
    ssize_t bl = readlink("/proc/self/exe", bin, sizeof bin - 1);
    if (rc || bl <= 0 || !getcwd(cwd, sizeof cwd) || !(abs = realpath(dir, NULL))) {
        fprintf(stderr, "flowswitch sim --emit-commands: %s: %s\n", dir,
                strerror(rc ? -rc : errno));
        return 1;
    }
    bin[bl] = '\0';
    snprintf(path, sizeof path, "%s/commands.sh", dir);
    FILE *f = fopen(path, "w");
    for (size_t i = 0; f && i < p->t.n_points; i++) {
        const char *all[SWEEP_SETS_MAX + 2];
        char setbuf[2][2 * EXP_PARAM_LEN + 2], out[4400];
        struct sweep_run run = {scenario, sets, n_sets, p->keys, n_specs, &p->t};
        sweep_point_sets(&run, i, all, setbuf);
        fputs("cd ", f);
        sweep_quote(f, cwd);
        fputs(" && ", f);
        sweep_quote(f, bin);
        fputs(" sim --point-out ", f);
        snprintf(out, sizeof out, "%s/points/%zu.json", abs, i);
        sweep_quote(f, out);
        for (size_t k = 0; k < n_sets + n_specs; k++) {
            fputs(" --set ", f);
            sweep_quote(f, all[k]);
        }
        fputc(' ', f);
        sweep_quote(f, scenario);
        fputc('\n', f);
    }
    json_t *doc = json_pack("{s:s, s:s, s:o, s:o, s:s, s:s, s:I}", "cwd", cwd, "scenario",
                            scenario, "sets", sweep_strings(sets, n_sets), "specs",
                            sweep_strings(specs, n_specs), "out_dir", out_dir, "command",
                            command, "points", (json_int_t)p->t.n_points);
    char jpath[4400];
    snprintf(jpath, sizeof jpath, "%s/sweep.json", dir);
    bool ok = f && !ferror(f) && doc &&
              !json_dump_file(doc, jpath, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    ok = (f ? !fclose(f) : false) && ok;
    json_decref(doc);
    free(abs);
    if (!ok) {
        fprintf(stderr, "flowswitch sim --emit-commands: %s: cannot write\n", dir);
        return 1;
    }
    printf("sweep: %zu commands in %s; run them (e.g. parallel < %s), then: "
           "flowswitch sim merge %s\n", p->t.n_points, path, path, dir);
    return 0;
}

int fs_sim_point(const char *scenario, const char *const *sets, size_t n_sets,
                 const char *out)
{
    char err[4096];
    struct scenario sc;
    if (scenario_load(scenario, sets, n_sets, &sc, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    scenario_free(&sc);
    struct exp_point *pt = calloc(1, sizeof *pt);
    if (!pt || exp_run_point(scenario, sets, n_sets, pt, err, sizeof err)) {
        fprintf(stderr, "flowswitch sim --point-out: %s\n", pt ? err : "out of memory");
        free(pt);
        return 2;
    }
    json_t *m = json_array(), *us = json_array(), *pr = json_array();
    for (size_t i = 0; i < EXP_M_N; i++)
        json_array_append_new(m, json_real(pt->m[i]));
    for (unsigned i = 0; i < pt->n_cdf; i++) {
        json_array_append_new(us, json_real(pt->cdf_us[i]));
        json_array_append_new(pr, json_real(pt->cdf_p[i]));
    }
    json_t *doc = json_pack("{s:o, s:o, s:o}", "m", m, "cdf_us", us, "cdf_p", pr);
    int rc = doc ? json_dump_file(doc, out, JSON_COMPACT | JSON_REAL_PRECISION(17)) : -1;
    json_decref(doc);
    free(pt);
    if (rc) {
        fprintf(stderr, "flowswitch sim --point-out: %s: cannot write\n", out);
        return 1;
    }
    return 0;
}

/* Reads DIR/points/I.json into pt's figures. Returns 0, or -1 with err. */
static int sweep_point_read(const char *dir, size_t i, struct exp_point *pt, char *err,
                            size_t errlen)
{
    char path[4400];
    json_error_t je;
    snprintf(path, sizeof path, "%s/points/%zu.json", dir, i);
    json_t *doc = json_load_file(path, 0, &je), *m, *us, *pr;
    int rc = -1;
    if (!doc) {
        bool missing = access(path, F_OK) != 0;
        fs_errf(err, errlen, "%s: %s%s%zu of %s/commands.sh", path,
                missing ? "missing" : je.text, missing ? " (run line " : " (from line ", i + 1,
                dir);
        strncat(err, ")", errlen - strlen(err) - 1);
        return -1;
    }
    m = json_object_get(doc, "m");
    us = json_object_get(doc, "cdf_us");
    pr = json_object_get(doc, "cdf_p");
    size_t n = json_array_size(us);
    if (json_array_size(m) == EXP_M_N && n <= EXP_CDF_POINTS && json_array_size(pr) == n) {
        rc = 0;
        for (size_t k = 0; k < EXP_M_N; k++)
            pt->m[k] = json_number_value(json_array_get(m, k));
        for (size_t k = 0; k < n; k++) {
            pt->cdf_us[k] = json_number_value(json_array_get(us, k));
            pt->cdf_p[k] = json_number_value(json_array_get(pr, k));
        }
        pt->n_cdf = (unsigned)n;
    } else {
        fs_errf(err, errlen, "%s: not a point's figures (m: %d numbers, cdf_us and cdf_p)",
                path, EXP_M_N);
    }
    json_decref(doc);
    return rc;
}

/* The strings of JSON array a (NULL if one is not a string). */
static const char **sweep_json_strings(json_t *a, size_t *n)
{
    *n = json_array_size(a);
    const char **v = calloc(*n + 1, sizeof *v);
    for (size_t i = 0; v && i < *n; i++) {
        v[i] = json_string_value(json_array_get(a, i));
        if (!v[i]) {
            free(v);
            return NULL;
        }
    }
    return v;
}

int fs_sim_merge(const char *dir)
{
    char path[4400], err[4096];
    json_error_t je;
    snprintf(path, sizeof path, "%s/sweep.json", dir);
    json_t *doc = json_load_file(path, 0, &je);
    char *abs = realpath(dir, NULL);
    const char *cwd, *scen, *out_dir, *command;
    size_t n_sets = 0, n_specs = 0;
    const char **sets = NULL, **specs = NULL;
    int rc = 1;
    if (!doc || !abs ||
        json_unpack_ex(doc, &je, 0, "{s:s, s:s, s:s, s:s}", "cwd", &cwd, "scenario", &scen,
                       "out_dir", &out_dir, "command", &command) ||
        !(sets = sweep_json_strings(json_object_get(doc, "sets"), &n_sets)) ||
        !(specs = sweep_json_strings(json_object_get(doc, "specs"), &n_specs))) {
        fprintf(stderr, "flowswitch sim merge: %s: %s\n", path,
                doc ? "not written by --emit-commands" : je.text);
        goto out;
    }
    /* The sweep's paths (scenario, --set files, the page) are relative to
     * where it was written. */
    if (chdir(cwd)) {
        fprintf(stderr, "flowswitch sim merge: %s: %s\n", cwd, strerror(errno));
        goto out;
    }
    struct sweep_plan p;
    if ((rc = sweep_plan(&p, scen, sets, n_sets, specs, n_specs)))
        goto out;
    for (size_t i = 0; i < p.t.n_points && rc == 0; i++) {
        if (sweep_point_read(abs, i, &p.t.points[i], err, sizeof err)) {
            fprintf(stderr, "flowswitch sim merge: %s\n", err);
            rc = 1;
        }
    }
    if (rc == 0)
        rc = sweep_report(&p, scen, out_dir, command);
    sweep_plan_free(&p);
out:
    free(sets);
    free(specs);
    free(abs);
    json_decref(doc);
    return rc;
}

/* Runs every point of the plan, n_jobs at a time (jobs.h). Returns 0, or
 * 2 with the failed point's error printed. */
static int sweep_run_points(struct sweep_plan *p, const char *scenario,
                            const char *const *sets, size_t n_sets, unsigned n_jobs)
{
    struct jobs_points q = {.t = &p->t};
    struct sweep_run run = {scenario, sets, n_sets, p->keys, p->n_keys, &p->t};
    char err[4096];
    int rc = 0;
    for (size_t i = 0; i < p->t.n_points && rc == 0; i++) {
        const char *all[SWEEP_SETS_MAX + 2];
        char setbuf[2][2 * EXP_PARAM_LEN + 2];
        sweep_point_sets(&run, i, all, setbuf);
        if (jobs_points_add(&q, i, scenario, all, n_sets + p->n_keys, false)) {
            fs_errf(err, sizeof err, "out of memory");
            rc = -1;
        }
    }
    if (rc == 0)
        rc = jobs_points_run(&q, n_jobs, err, sizeof err);
    jobs_points_free(&q);
    if (rc)
        fprintf(stderr, "flowswitch sim --sweep: %s\n", err);
    return rc ? 2 : 0;
}

int fs_sim_sweep(const char *scenario, const char *const *sets, size_t n_sets,
                 const char *const *specs, size_t n_specs, const char *out_dir,
                 const char *command, unsigned n_jobs, const char *emit_dir)
{
    struct sweep_plan p;
    int rc = sweep_plan(&p, scenario, sets, n_sets, specs, n_specs);
    if (rc)
        return rc;
    if (emit_dir) {
        rc = sweep_emit(&p, scenario, sets, n_sets, specs, n_specs, out_dir, command,
                        emit_dir);
    } else {
        rc = sweep_run_points(&p, scenario, sets, n_sets, n_jobs);
        if (rc == 0)
            rc = sweep_report(&p, scenario, out_dir, command);
    }
    sweep_plan_free(&p);
    return rc;
}
