/* bench_flowcache.c: the flow-cache hierarchy from 1 to 1M flows.
 *
 *   bench_flowcache [--quick] [--json FILE] [--no-callgrind]
 *
 * One core, one PMD's fcache, 64-byte packets of one in_port. Per packet
 * the timed loop does what the datapath does around a lookup: it writes the
 * packet's flow key into the batch's key array (standing in for parse: the
 * key is built from the flow id, so no 136-byte-per-flow key table is read
 * from memory), computes flow_hash(), then fcache_lookup_batch() on 32
 * packets, then a minimal forwarding step (the first action's output port
 * is counted, or a drop). The loop without the lookup is measured too
 * ("overhead").
 *
 * Traffic: F distinct flows (1 .. 1M), each packet's flow drawn uniformly
 * or Zipf(1.0) from a precomputed sequence of 4M flow ids. Rules: S classes
 * (1, 4, 16 subtables) of 64 rules each; class c matches tp_dst = 1000 + c
 * and one of 64 nw_dst /24s, and adds c bits of dl_src to its mask, so the
 * megaflow masks (the class's rule mask: the rules above differ from the
 * flow on tp_dst or nw_dst bits within it) are S distinct masks and there
 * are S * 64 megaflows. Stages: EMC only (SMC
 * off), EMC + SMC (defaults), classifier only (EMC and SMC off). Every
 * measurement follows a warm-up of max(2M, 3F) packets and is the median of
 * 8 windows (of 500k packets; 125k with --quick), timed in thread CPU time.
 * EMC+SMC at 1 flow and at 1M flows are measured as a pair, their windows
 * interleaved: the 1M / 1-flow ratio is the median of the windows' ratios.
 *
 * Also: the EMC miss ratio of 10k flows over 3 subtables into a 16K-entry
 * EMC with 1 and 2 ways (insertion always; round-robin flows as in OVS's
 * measurement, and uniform random), prefetch on vs off, and the
 * instructions per packet of the 1-flow EMC-hit path under callgrind
 * (valgrind --tool=callgrind; deterministic on any machine). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "actions.h"
#include "bench_dp.h"
#include "fcache.h"
#include "flow.h"
#include "packet.h"
#include "rules.h"

#define SEQ_LEN (1u << 22)
#define BENCH_WINDOWS 8 /* measurement windows per figure; the median is kept */
#define RULES_PER_CLASS 64

enum stage { ST_EMC, ST_EMC_SMC, ST_CLS, ST_N };
static const char *const stage_name[ST_N] = {"emc", "emc_smc", "classifier"};
enum dist { D_UNIFORM, D_ZIPF, D_N };
static const char *const dist_name[D_N] = {"uniform", "zipf"};
static const uint32_t flow_counts[] = {1, 100, 1000, 10000, 100000, 1000000};
#define N_FLOWS (sizeof flow_counts / sizeof flow_counts[0])
static const unsigned subtable_counts[] = {1, 4, 16};
#define N_SUBT (sizeof subtable_counts / sizeof subtable_counts[0])

struct result {
    double mpps;
    double emc, smc, mf, upcall; /* fractions of packets */
    double subtables_per_hit;
};

struct bench {
    bool quick;
    uint64_t warm_min, meas;
    uint32_t *seq;
    uint64_t sink;
    uint32_t *seq2; /* the second stream of a paired measurement */
    struct result res[ST_N][D_N][N_SUBT][N_FLOWS];
    struct bench_stat ratio_1m[D_N][N_SUBT]; /* EMC+SMC 1M flows / 1 flow, paired */
    double overhead_mpps;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CPU time of this thread: the machine may be shared, and time the
 * scheduler gives to other processes must not count against us. */
static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Fills seq with flow ids of F flows: uniform, Zipf(1.0) by inverse CDF
 * (popularity rank permuted over the ids), or round-robin. */
static void make_seq(uint32_t *seq, uint32_t flows, int dist, bool round_robin)
{
    uint64_t s = 0xbe9c4 + flows * 7 + (uint64_t)dist;
    if (round_robin) {
        for (uint32_t i = 0; i < SEQ_LEN; i++)
            seq[i] = i % flows;
        return;
    }
    if (dist == D_UNIFORM || flows == 1) {
        for (uint32_t i = 0; i < SEQ_LEN; i++)
            seq[i] = (uint32_t)(((rng_next(&s) >> 32) * flows) >> 32);
        return;
    }
    double *cdf = malloc(flows * sizeof *cdf);
    if (!cdf) {
        perror("malloc");
        exit(1);
    }
    double sum = 0;
    for (uint32_t i = 0; i < flows; i++) {
        sum += 1.0 / (double)(i + 1);
        cdf[i] = sum;
    }
    for (uint32_t i = 0; i < SEQ_LEN; i++) {
        double u = (double)(rng_next(&s) >> 11) / 9007199254740992.0 * sum;
        uint32_t lo = 0, hi = flows - 1;
        while (lo < hi) {
            uint32_t mid = (lo + hi) / 2;
            if (cdf[mid] < u)
                lo = mid + 1;
            else
                hi = mid;
        }
        /* rank -> id: a bijection, popular flows spread over the classes */
        seq[i] = (uint32_t)(((uint64_t)lo * 2654435761u) % flows);
    }
    free(cdf);
}

/* The key of flow f with S classes (see the top comment). */
static inline void make_key(struct flow_key *k, uint32_t f, unsigned S)
{
    memset(k, 0, sizeof *k);
    uint32_t c = f % S, r = (f / S) % RULES_PER_CLASS;
    k->in_port = 0;
    k->dl_type = 0x0800;
    k->dl_src[0] = 0x02;
    k->dl_src[5] = 0x01;
    k->dl_dst[0] = 0x02;
    k->dl_dst[4] = (uint8_t)r; /* nw_dst's varying bytes again (make_rules_wide()) */
    k->dl_dst[5] = (uint8_t)(f / (S * RULES_PER_CLASS));
    k->nw_proto = 6;
    k->nw_ttl = 64;
    k->nw_src = htonl(0x0b000000u | (f & 0xffffff));
    k->nw_dst = htonl(0x0a000000u | r << 8 | ((f / (S * RULES_PER_CLASS)) & 0xff));
    k->tp_src = (uint16_t)(1024 + (f >> 24));
    k->tp_dst = (uint16_t)(1000 + c);
}

static struct rule *mk_rule(int prio, const struct flow_key *match,
                            const struct flow_mask *mask, uint16_t port)
{
    struct rule *r = calloc(1, sizeof *r);
    if (!r)
        exit(1);
    r->priority = prio;
    flow_apply_mask(&r->match, match, mask);
    r->mask = *mask;
    struct action a = {.type = ACT_OUTPUT, .u.port = port};
    r->actions = action_list_create(&a, 1);
    return r;
}

static struct rule_table *make_rules(unsigned S)
{
    struct rule_table *t = rule_table_create();
    for (unsigned c = 0; c < S; c++) {
        for (unsigned r = 0; r < RULES_PER_CLASS; r++) {
            struct flow_key k;
            make_key(&k, c + S * r, S); /* a flow of class c, rule r */
            struct flow_mask m;
            memset(&m, 0, sizeof m);
            m.m.dl_type = 0xffff;
            m.m.nw_proto = 0xff;
            m.m.tp_dst = 0xffff;
            m.m.nw_dst = htonl(0xffffff00u);
            /* c leading bits of dl_src: a distinct mask per class */
            for (unsigned b = 0; b < c; b++)
                m.m.dl_src[b / 8] |= (uint8_t)(0x80u >> (b % 8));
            rule_table_add(t, mk_rule(1000 - (int)c, &k, &m, (uint16_t)(1 + c % 8)));
        }
    }
    return t;
}

/* One subtable holding many megaflows: a higher-priority rule on an exact
 * dl_dst that no flow has makes every megaflow's mask cover the whole
 * dl_dst (a MAC is decided whole, not by a prefix), so there is one
 * megaflow per distinct dl_dst (16384 with S = 1). */
static struct rule_table *make_rules_wide(void)
{
    struct rule_table *t = rule_table_create();
    struct flow_key k;
    struct flow_mask m;
    memset(&k, 0, sizeof k);
    memset(&m, 0, sizeof m);
    k.dl_type = 0x0800;
    k.dl_dst[0] = 0x04;
    m.m.dl_type = 0xffff;
    memset(m.m.dl_dst, 0xff, sizeof m.m.dl_dst);
    rule_table_add(t, mk_rule(2000, &k, &m, 9));
    make_key(&k, 0, 1);
    memset(&m, 0, sizeof m);
    m.m.dl_type = 0xffff;
    m.m.nw_proto = 0xff;
    m.m.tp_dst = 0xffff;
    rule_table_add(t, mk_rule(1000, &k, &m, 1));
    return t;
}

static void stage_cfg(struct fcache_cfg *c, enum stage st)
{
    fcache_cfg_default(c);
    /* Every stage as named, also with one subtable (where the default
     * direct stage would skip the EMC and SMC: it is what the classifier
     * stage measures). */
    c->direct_subtables = 0;
    if (st == ST_EMC)
        c->smc_enabled = false;
    if (st == ST_CLS) {
        c->smc_enabled = false;
        c->emc_insert_inv_prob = 0;
    }
}

/* Runs n packets from seq through fc (or only the overhead if fc is NULL).
 * Returns elapsed ns. */
static uint64_t run_packets(struct bench *b, const uint32_t *seq, struct fcache *fc, unsigned S,
                            uint64_t n, uint64_t *pos)
{
    struct flow_key keys[PKT_BATCH_MAX];
    uint32_t hashes[PKT_BATCH_MAX];
    const struct action_list *out[PKT_BATCH_MAX];
    uint64_t port_tx[16] = {0}, drops = 0;
    uint64_t p = *pos;
    uint64_t t0 = cpu_ns();
    for (uint64_t done = 0; done < n; done += PKT_BATCH_MAX) {
        for (unsigned i = 0; i < PKT_BATCH_MAX; i++) {
            make_key(&keys[i], seq[p++ & (SEQ_LEN - 1)], S);
            hashes[i] = flow_hash(&keys[i], 0);
        }
        if (fc) {
            fcache_lookup_batch(fc, keys, hashes, PKT_BATCH_MAX, out, now_ns());
            for (unsigned i = 0; i < PKT_BATCH_MAX; i++) {
                if (out[i] && out[i]->n)
                    port_tx[out[i]->a[0].u.port & 15]++;
                else
                    drops++;
            }
        } else {
            for (unsigned i = 0; i < PKT_BATCH_MAX; i++)
                port_tx[hashes[i] & 15] += keys[i].tp_dst;
        }
    }
    uint64_t t = cpu_ns() - t0;
    *pos = p;
    for (unsigned i = 0; i < 16; i++)
        b->sink += port_tx[i];
    b->sink += drops;
    return t;
}

/* One fcache under measurement: created and warmed up by meas_start(),
 * timed window by window with meas_window(), summed up by meas_finish(). */
struct meas {
    struct fcache *fc;
    const uint32_t *seq;
    unsigned S;
    uint64_t pos, win;
    double ns[BENCH_WINDOWS];
    struct fcache_stats s0;
};

static void meas_start(struct bench *b, struct meas *m, const uint32_t *seq,
                       const struct fcache_cfg *cfg, const struct rule_table *t, unsigned S,
                       uint32_t flows)
{
    m->fc = fcache_create(cfg, t);
    if (!m->fc) {
        fprintf(stderr, "fcache_create failed\n");
        exit(1);
    }
    m->seq = seq;
    m->S = S;
    m->pos = 0;
    m->win = b->meas / BENCH_WINDOWS / PKT_BATCH_MAX * PKT_BATCH_MAX;
    uint64_t warm = b->warm_min > 3ull * flows ? b->warm_min : 3ull * flows;
    run_packets(b, seq, m->fc, S, warm, &m->pos);
    fcache_get_stats(m->fc, &m->s0);
}

/* Times window w; returns its Mpps. */
static double meas_window(struct bench *b, struct meas *m, int w)
{
    m->ns[w] = (double)run_packets(b, m->seq, m->fc, m->S, m->win, &m->pos);
    return (double)m->win / (m->ns[w] / 1e3);
}

/* The median window's Mpps and the hit shares of all windows; destroys the
 * fcache. */
static struct result meas_finish(struct meas *m)
{
    struct fcache_stats s1;
    fcache_get_stats(m->fc, &s1);
    fcache_destroy(m->fc);
    const struct fcache_stats *s0 = &m->s0;
    struct result r;
    double n = (double)(s1.n[FCACHE_STAT_LOOKUPS] - s0->n[FCACHE_STAT_LOOKUPS]);
    r.mpps = (double)m->win / (bench_stat_of(m->ns, BENCH_WINDOWS).median / 1e3);
    r.emc = (double)(s1.n[FCACHE_STAT_EMC_HITS] - s0->n[FCACHE_STAT_EMC_HITS]) / n;
    r.smc = (double)(s1.n[FCACHE_STAT_SMC_HITS] - s0->n[FCACHE_STAT_SMC_HITS]) / n;
    r.mf = (double)(s1.n[FCACHE_STAT_MEGAFLOW_HITS] - s0->n[FCACHE_STAT_MEGAFLOW_HITS]) / n;
    r.upcall = (double)(s1.n[FCACHE_STAT_UPCALLS] - s0->n[FCACHE_STAT_UPCALLS]) / n;
    uint64_t mh = s1.n[FCACHE_STAT_MEGAFLOW_HITS] - s0->n[FCACHE_STAT_MEGAFLOW_HITS];
    r.subtables_per_hit =
        mh ? (double)(s1.n[FCACHE_STAT_SUBTABLE_LOOKUPS] - s0->n[FCACHE_STAT_SUBTABLE_LOOKUPS]) / (double)mh : 0;
    return r;
}

/* The median of BENCH_WINDOWS windows of flows from b->seq. */
static struct result measure(struct bench *b, const struct fcache_cfg *cfg,
                             const struct rule_table *t, unsigned S, uint32_t flows)
{
    struct meas m;
    meas_start(b, &m, b->seq, cfg, t, S, flows);
    for (int w = 0; w < BENCH_WINDOWS; w++)
        meas_window(b, &m, w);
    return meas_finish(&m);
}

/* Two measurements side by side, a from b->seq and c from b->seq2, their
 * windows interleaved (the order alternating); returns the median and
 * range of the windows' Mpps ratios c / a. */
static struct bench_stat measure_pair(struct bench *b, const struct fcache_cfg *cfg,
                                      const struct rule_table *t, unsigned S, uint32_t flows_a,
                                      uint32_t flows_c, struct result *a, struct result *c)
{
    struct meas ma, mc;
    double ratio[BENCH_WINDOWS];
    meas_start(b, &ma, b->seq, cfg, t, S, flows_a);
    meas_start(b, &mc, b->seq2, cfg, t, S, flows_c);
    for (int w = 0; w < BENCH_WINDOWS; w++) {
        double x, y;
        if (w % 2) {
            y = meas_window(b, &mc, w);
            x = meas_window(b, &ma, w);
        } else {
            x = meas_window(b, &ma, w);
            y = meas_window(b, &mc, w);
        }
        ratio[w] = y / x;
    }
    *a = meas_finish(&ma);
    *c = meas_finish(&mc);
    return bench_stat_of(ratio, BENCH_WINDOWS);
}

/* EMC miss ratio: F flows over S subtables, EMC of 'entries', insertion
 * always, SMC off. */
static double emc_miss_ratio(struct bench *b, unsigned ways, uint32_t entries, uint32_t flows,
                             unsigned S, bool round_robin)
{
    make_seq(b->seq, flows, D_UNIFORM, round_robin);
    struct rule_table *t = make_rules(S);
    struct fcache_cfg c;
    fcache_cfg_default(&c);
    c.direct_subtables = 0;
    c.emc_entries = entries;
    c.emc_ways = ways;
    c.emc_insert_inv_prob = 1;
    c.smc_enabled = false;
    struct fcache *fc = fcache_create(&c, t);
    uint64_t pos = 0;
    run_packets(b, b->seq, fc, S, 20ull * flows, &pos);
    struct fcache_stats s0, s1;
    fcache_get_stats(fc, &s0);
    run_packets(b, b->seq, fc, S, 50ull * flows, &pos);
    fcache_get_stats(fc, &s1);
    fcache_destroy(fc);
    rule_table_destroy(t);
    return 1.0 - (double)(s1.n[FCACHE_STAT_EMC_HITS] - s0.n[FCACHE_STAT_EMC_HITS]) / (double)(s1.n[FCACHE_STAT_LOOKUPS] - s0.n[FCACHE_STAT_LOOKUPS]);
}

/* --ipp-run N: N packets of 1 flow (EMC+SMC defaults, 1 subtable), for
 * callgrind. */
static int ipp_run(uint64_t n)
{
    struct bench b;
    memset(&b, 0, sizeof b);
    b.seq = calloc(SEQ_LEN, sizeof *b.seq); /* all flow 0 */
    struct rule_table *t = make_rules(1);
    struct fcache_cfg c;
    fcache_cfg_default(&c);
    c.direct_subtables = 0; /* the EMC-hit path */
    struct fcache *fc = fcache_create(&c, t);
    uint64_t pos = 0;
    run_packets(&b, b.seq, fc, 1, n, &pos);
    struct fcache_stats s;
    fcache_get_stats(fc, &s);
    fcache_destroy(fc);
    rule_table_destroy(t);
    free(b.seq);
    printf("emc_hits %llu of %llu\n", (unsigned long long)s.n[FCACHE_STAT_EMC_HITS],
           (unsigned long long)s.n[FCACHE_STAT_LOOKUPS]);
    return 0;
}

/* Total instructions callgrind counted for "self --ipp-run n", with
 * collection limited to 'toggle' if not NULL. -1 if valgrind is missing. */
static double callgrind_ir(const char *self, uint64_t n, const char *toggle)
{
    char out[64], nbuf[32], tog[128];
    snprintf(out, sizeof out, "/tmp/bench_flowcache.cg.%d", (int)getpid());
    snprintf(nbuf, sizeof nbuf, "%llu", (unsigned long long)n);
    char outopt[96];
    snprintf(outopt, sizeof outopt, "--callgrind-out-file=%s", out);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        if (toggle) {
            snprintf(tog, sizeof tog, "--toggle-collect=%s", toggle);
            execlp("valgrind", "valgrind", "--tool=callgrind", outopt, tog, self, "--ipp-run",
                   nbuf, (char *)NULL);
        } else {
            execlp("valgrind", "valgrind", "--tool=callgrind", outopt, self, "--ipp-run", nbuf,
                   (char *)NULL);
        }
        _exit(127);
    }
    int st;
    if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return -1;
    FILE *f = fopen(out, "r");
    if (!f)
        return -1;
    char line[512];
    double ir = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "summary:", 8) || !strncmp(line, "totals:", 7))
            ir = strtod(strchr(line, ':') + 1, NULL);
    fclose(f);
    unlink(out);
    return ir;
}

static void json_result_table(FILE *f, struct bench *b)
{
    fprintf(f, "  \"mpps\": {\n");
    bool first = true;
    for (int st = 0; st < ST_N; st++)
        for (int d = 0; d < D_N; d++)
            for (unsigned s = 0; s < N_SUBT; s++) {
                fprintf(f, "%s    \"%s/%s/%usubtables\": {", first ? "" : ",\n", stage_name[st],
                        dist_name[d], subtable_counts[s]);
                first = false;
                for (unsigned i = 0; i < N_FLOWS; i++)
                    fprintf(f, "%s\"%u\": %.3f", i ? ", " : "", flow_counts[i],
                            b->res[st][d][s][i].mpps);
                fprintf(f, "}");
            }
    fprintf(f, "\n  },\n  \"hits\": {\n");
    first = true;
    for (int st = 0; st < ST_N; st++)
        for (int d = 0; d < D_N; d++)
            for (unsigned s = 0; s < N_SUBT; s++) {
                fprintf(f, "%s    \"%s/%s/%usubtables\": {", first ? "" : ",\n", stage_name[st],
                        dist_name[d], subtable_counts[s]);
                first = false;
                for (unsigned i = 0; i < N_FLOWS; i++) {
                    const struct result *r = &b->res[st][d][s][i];
                    fprintf(f,
                            "%s\"%u\": {\"emc\": %.4f, \"smc\": %.4f, \"megaflow\": %.4f, "
                            "\"upcall\": %.6f, \"subtables_per_megaflow_hit\": %.2f}",
                            i ? ", " : "", flow_counts[i], r->emc, r->smc, r->mf, r->upcall,
                            r->subtables_per_hit);
                }
                fprintf(f, "}");
            }
    fprintf(f, "\n  },\n");
}

static const char *fmt_flows(uint32_t n, char *buf)
{
    if (n >= 1000000)
        sprintf(buf, "%uM", n / 1000000);
    else if (n >= 1000)
        sprintf(buf, "%uk", n / 1000);
    else
        sprintf(buf, "%u", n);
    return buf;
}

int main(int argc, char **argv)
{
    struct bench *b = calloc(1, sizeof *b);
    const char *json = NULL;
    bool callgrind = true;
    const char *one_case = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            b->quick = true;
        else if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json = argv[++i];
        else if (!strcmp(argv[i], "--case") && i + 1 < argc)
            one_case = argv[++i];
        else if (!strcmp(argv[i], "--no-callgrind"))
            callgrind = false;
        else if (!strcmp(argv[i], "--ipp-run") && i + 1 < argc)
            return ipp_run(strtoull(argv[i + 1], NULL, 10));
        else {
            fprintf(stderr,
                    "usage: %s [--quick] [--json FILE] [--no-callgrind] "
                    "[--case STAGE,DIST,SUBTABLES,FLOWS[,PREFETCH]]\n",
                    argv[0]);
            return 2;
        }
    }
    b->warm_min = b->quick ? 500000 : 2000000;
    b->meas = b->quick ? 1000000 : 4000000;
    if (!b)
        return 1;
    b->seq = malloc(SEQ_LEN * sizeof *b->seq);
    b->seq2 = malloc(SEQ_LEN * sizeof *b->seq2);
    if (!b->seq || !b->seq2)
        return 1;

    uint64_t t_start = now_ns();
    char fb[16];
    struct fcache_cfg cfg;

    if (one_case) {
        /* --case STAGE,DIST,SUBTABLES,FLOWS[,prefetch 0|1]: one measurement. */
        char st_s[32], d_s[32];
        unsigned S = 1, flows = 1, pfo = 1;
        if (sscanf(one_case, "%31[^,],%31[^,],%u,%u,%u", st_s, d_s, &S, &flows, &pfo) < 4) {
            fprintf(stderr, "--case STAGE,DIST,SUBTABLES,FLOWS[,PREFETCH]\n");
            return 2;
        }
        int st = 0, d = 0;
        while (st < ST_N && strcmp(stage_name[st], st_s))
            st++;
        while (d < D_N && strcmp(dist_name[d], d_s))
            d++;
        if (st == ST_N || d == D_N || !S || !flows)
            return 2;
        make_seq(b->seq, flows, d, false);
        struct rule_table *t = make_rules(S);
        stage_cfg(&cfg, st);
        cfg.prefetch = pfo;
        struct result r = measure(b, &cfg, t, S, flows);
        printf("%s %s %u subtables %u flows prefetch %u: %.2f Mpps (emc %.1f%% smc %.1f%% "
               "megaflow %.1f%% upcall %.4f%%, %.2f subtables per megaflow hit)\n",
               stage_name[st], dist_name[d], S, flows, pfo, r.mpps, 100 * r.emc, 100 * r.smc,
               100 * r.mf, 100 * r.upcall, r.subtables_per_hit);
        rule_table_destroy(t);
        return b->sink == 42 ? 3 : 0;
    }

    /* The loop without lookups (the median of the windows too). */
    make_seq(b->seq, 1000000, D_UNIFORM, false);
    {
        uint64_t pos = 0, win = b->meas / BENCH_WINDOWS;
        double ns[BENCH_WINDOWS];
        run_packets(b, b->seq, NULL, 1, b->warm_min, &pos);
        for (int w = 0; w < BENCH_WINDOWS; w++)
            ns[w] = (double)run_packets(b, b->seq, NULL, 1, win, &pos);
        b->overhead_mpps = (double)win / (bench_stat_of(ns, BENCH_WINDOWS).median / 1e3);
    }

    /* Prefetch off/on, EMC+SMC, 1 subtable, uniform: 3 alternating pairs;
     * mean, min and max of each. Without prefetch the exposed memory latency
     * varies from run to run, so a single pair can mislead. */
    enum { PF_REPS = 3 };
    double pf[2][3], pf_min[2][3], pf_max[2][3];
    const uint32_t pf_flows[3] = {10000, 100000, 1000000};
    for (unsigned i = 0; i < 3; i++) {
        make_seq(b->seq, pf_flows[i], D_UNIFORM, false);
        struct rule_table *t = make_rules(1);
        for (int on = 0; on < 2; on++) {
            pf[on][i] = 0;
            pf_min[on][i] = 1e9;
            pf_max[on][i] = 0;
        }
        for (int rep = 0; rep < 2 * PF_REPS; rep++) {
            int on = rep % 2;
            stage_cfg(&cfg, ST_EMC_SMC);
            cfg.prefetch = on;
            double m = measure(b, &cfg, t, 1, pf_flows[i]).mpps;
            pf[on][i] += m / PF_REPS;
            pf_min[on][i] = m < pf_min[on][i] ? m : pf_min[on][i];
            pf_max[on][i] = m > pf_max[on][i] ? m : pf_max[on][i];
        }
        rule_table_destroy(t);
    }
    /* The classifier's bucket prefetch: one subtable of 16384 megaflows,
     * classifier only, 1M flows. */
    double pfc[2] = {0, 0};
    {
        make_seq(b->seq, 1000000, D_UNIFORM, false);
        struct rule_table *t = make_rules_wide();
        for (int rep = 0; rep < 2 * PF_REPS; rep++) {
            int on = rep % 2;
            stage_cfg(&cfg, ST_CLS);
            cfg.prefetch = on;
            pfc[on] += measure(b, &cfg, t, 1, 1000000).mpps / PF_REPS;
        }
        rule_table_destroy(t);
    }

    for (int d = 0; d < D_N; d++) {
        for (unsigned i = 0; i < N_FLOWS; i++) {
            make_seq(b->seq, flow_counts[i], d, false);
            for (unsigned s = 0; s < N_SUBT; s++) {
                struct rule_table *t = make_rules(subtable_counts[s]);
                for (int st = 0; st < ST_N; st++) {
                    if (st == ST_EMC_SMC && (i == 0 || i == N_FLOWS - 1))
                        continue; /* measured as a pair below */
                    stage_cfg(&cfg, st);
                    b->res[st][d][s][i] = measure(b, &cfg, t, subtable_counts[s], flow_counts[i]);
                }
                rule_table_destroy(t);
            }
            fprintf(stderr, ".");
        }
    }
    /* EMC+SMC at 1 flow and 1M flows, windows interleaved: the ratio. */
    for (int d = 0; d < D_N; d++) {
        make_seq(b->seq, flow_counts[0], d, false);
        make_seq(b->seq2, flow_counts[N_FLOWS - 1], d, false);
        for (unsigned s = 0; s < N_SUBT; s++) {
            struct rule_table *t = make_rules(subtable_counts[s]);
            struct result *r = b->res[ST_EMC_SMC][d][s];
            stage_cfg(&cfg, ST_EMC_SMC);
            b->ratio_1m[d][s] = measure_pair(b, &cfg, t, subtable_counts[s], flow_counts[0],
                                             flow_counts[N_FLOWS - 1], &r[0], &r[N_FLOWS - 1]);
            rule_table_destroy(t);
        }
        fprintf(stderr, ".");
    }
    fprintf(stderr, "\n");

    /* EMC miss ratio, 10k flows, 3 subtables, 16K entries. */
    double miss_rr[2], miss_rnd[2];
    for (unsigned w = 1; w <= 2; w++) {
        miss_rr[w - 1] = emc_miss_ratio(b, w, 16384, 10000, 3, true);
        miss_rnd[w - 1] = emc_miss_ratio(b, w, 16384, 10000, 3, false);
    }

    /* Instructions per packet of the 1-flow EMC-hit path. */
    double ipp_loop = -1, ipp_lookup = -1;
    if (callgrind) {
        const uint64_t n1 = 10016, n2 = 110016;
        double a = callgrind_ir(argv[0], n1, NULL), c = callgrind_ir(argv[0], n2, NULL);
        if (a > 0 && c > 0)
            ipp_loop = (c - a) / (double)(n2 - n1);
        a = callgrind_ir(argv[0], n1, "fcache_lookup_batch");
        c = callgrind_ir(argv[0], n2, "fcache_lookup_batch");
        if (a > 0 && c > 0)
            ipp_lookup = (c - a) / (double)(n2 - n1);
    }

    /* Memory per PMD with the defaults. */
    struct fcache_memory mem;
    {
        struct rule_table *t = make_rules(16);
        fcache_cfg_default(&cfg);
        struct fcache *fc = fcache_create(&cfg, t);
        make_seq(b->seq, 100000, D_UNIFORM, false);
        uint64_t pos = 0;
        run_packets(b, b->seq, fc, 16, 400000, &pos);
        fcache_get_memory(fc, &mem);
        fcache_destroy(fc);
        rule_table_destroy(t);
    }

    /* The table. */
    printf("flowswitch flow-cache bench: 64-byte packets, 1 core, batches of %u, "
           "median of %d windows of %llu packets (thread CPU time) after >= %llu warm-up%s\n",
           PKT_BATCH_MAX, BENCH_WINDOWS, (unsigned long long)(b->meas / BENCH_WINDOWS),
           (unsigned long long)b->warm_min, b->quick ? " (--quick)" : "");
    printf("loop overhead without lookups (key build + flow_hash + forward): %.1f Mpps\n\n",
           b->overhead_mpps);
    printf("%-11s %-8s %-4s |", "stage", "traffic", "subt");
    for (unsigned i = 0; i < N_FLOWS; i++)
        printf(" %7s", fmt_flows(flow_counts[i], fb));
    printf("   Mpps\n");
    for (int st = 0; st < ST_N; st++)
        for (int d = 0; d < D_N; d++)
            for (unsigned s = 0; s < N_SUBT; s++) {
                printf("%-11s %-8s %-4u |", stage_name[st], dist_name[d], subtable_counts[s]);
                for (unsigned i = 0; i < N_FLOWS; i++)
                    printf(" %7.2f", b->res[st][d][s][i].mpps);
                printf("\n");
            }
    printf("\nhits per stage (emc/smc/megaflow %%, subtables probed per megaflow hit), "
           "uniform traffic:\n");
    for (int st = 0; st < ST_N; st++)
        for (unsigned s = 0; s < N_SUBT; s++) {
            printf("%-11s %2u subt |", stage_name[st], subtable_counts[s]);
            for (unsigned i = 0; i < N_FLOWS; i++) {
                const struct result *r = &b->res[st][D_UNIFORM][s][i];
                printf(" %s:%.0f/%.0f/%.0f,%.1f", fmt_flows(flow_counts[i], fb), 100 * r->emc,
                       100 * r->smc, 100 * r->mf, r->subtables_per_hit);
            }
            printf("\n");
        }
    printf("\nhits per stage, zipf traffic:\n");
    for (int st = 0; st < ST_N; st++)
        for (unsigned s = 0; s < N_SUBT; s++) {
            printf("%-11s %2u subt |", stage_name[st], subtable_counts[s]);
            for (unsigned i = 0; i < N_FLOWS; i++) {
                const struct result *r = &b->res[st][D_ZIPF][s][i];
                printf(" %s:%.0f/%.0f/%.0f,%.1f", fmt_flows(flow_counts[i], fb), 100 * r->emc,
                       100 * r->smc, 100 * r->mf, r->subtables_per_hit);
            }
            printf("\n");
        }
    printf("\nEMC+SMC 1M flows / 1 flow (same subtables and traffic; median [min-max] of "
           "%d interleaved window pairs):\n", BENCH_WINDOWS);
    for (int d = 0; d < D_N; d++)
        for (unsigned s = 0; s < N_SUBT; s++) {
            const struct result *r = b->res[ST_EMC_SMC][d][s];
            const struct bench_stat *q = &b->ratio_1m[d][s];
            printf("  %-8s %2u subtables: %.2f / %.2f Mpps, paired %.2f [%.2f-%.2f]\n",
                   dist_name[d], subtable_counts[s], r[N_FLOWS - 1].mpps, r[0].mpps, q->median,
                   q->min, q->max);
        }
    printf("\nprefetch (EMC+SMC, 1 subtable, uniform; mean of %d runs [min, max]): off -> on "
           "Mpps\n",
           PF_REPS);
    for (unsigned i = 0; i < 3; i++)
        printf("  %5s flows: %.2f [%.2f, %.2f] -> %.2f [%.2f, %.2f] (%+.1f%%)\n",
               fmt_flows(pf_flows[i], fb), pf[0][i], pf_min[0][i], pf_max[0][i], pf[1][i],
               pf_min[1][i], pf_max[1][i], 100 * (pf[1][i] / pf[0][i] - 1));
    printf("  classifier only, 1 subtable of 16384 megaflows, 1M flows: %.2f -> %.2f (%+.1f%%)\n",
           pfc[0], pfc[1], 100 * (pfc[1] / pfc[0] - 1));
    printf("\nEMC miss ratio, 10k flows, 3 subtables, 16K entries, insert always:\n");
    printf("  round-robin flows (OVS: 1-way ~47%%, 2-way ~14%%): 1-way %.1f%%, 2-way %.1f%%\n",
           100 * miss_rr[0], 100 * miss_rr[1]);
    printf("  uniform random flows:                          1-way %.1f%%, 2-way %.1f%%\n",
           100 * miss_rnd[0], 100 * miss_rnd[1]);
    if (ipp_loop > 0)
        printf("\ncallgrind, 1 flow, EMC hit: %.1f instructions/packet in fcache_lookup_batch, "
               "%.1f for the whole loop (key + hash + lookup + forward); %.2f Mpps measured\n",
               ipp_lookup, ipp_loop, b->res[ST_EMC_SMC][D_UNIFORM][0][0].mpps);
    else
        printf("\ncallgrind: not run (valgrind missing or --no-callgrind)\n");
    printf("\nmemory per PMD (defaults, 16 subtables, 1024 megaflows): EMC %zu B, SMC %zu B, "
           "megaflow table %zu B reserved / %zu B touched, classifier %zu B, total %zu B\n",
           mem.emc, mem.smc, mem.megaflows, mem.megaflows_touched, mem.classifier, mem.total);
    printf("bench time %.1f s\n", (double)(now_ns() - t_start) / 1e9);

    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            fprintf(stderr, "%s: %s\n", json, strerror(errno));
            return 1;
        }
        fprintf(f, "{\n  \"bench\": \"flowcache\",\n  \"quick\": %s,\n", b->quick ? "true" : "false");
        fprintf(f, "  \"packets_measured\": %llu,\n  \"overhead_mpps\": %.3f,\n",
                (unsigned long long)b->meas, b->overhead_mpps);
        json_result_table(f, b);
        fprintf(f, "  \"mpps_1flow\": %.3f,\n", b->res[ST_EMC_SMC][D_UNIFORM][0][0].mpps);
        fprintf(f, "  \"mpps_1m_flows_emc_smc\": %.3f,\n",
                b->res[ST_EMC_SMC][D_UNIFORM][0][N_FLOWS - 1].mpps);
        static const char *const sfx[3] = {"", "_min", "_max"};
        for (int k = 0; k < 3; k++) {
            fprintf(f, "  \"ratio_1m_over_1flow_emc_smc%s\": {", sfx[k]);
            for (int d = 0; d < D_N; d++)
                for (unsigned s = 0; s < N_SUBT; s++) {
                    const struct bench_stat *q = &b->ratio_1m[d][s];
                    fprintf(f, "%s\"%s/%usubtables\": %.3f", d || s ? ", " : "", dist_name[d],
                            subtable_counts[s], k == 0 ? q->median : k == 1 ? q->min : q->max);
                }
            fprintf(f, "},\n");
        }
        fprintf(f, "  \"estimator\": \"mpps: the median of %d windows; "
                   "ratio_1m_over_1flow_emc_smc: the median of the windows' ratios, the 1-flow "
                   "and 1M-flow windows interleaved, min and max beside it\",\n",
                BENCH_WINDOWS);
        fprintf(f, "  \"emc_miss_ratio_10k\": {\"1way\": %.4f, \"2way\": %.4f},\n", miss_rr[0],
                miss_rr[1]);
        fprintf(f, "  \"emc_miss_ratio_10k_uniform_random\": {\"1way\": %.4f, \"2way\": %.4f},\n",
                miss_rnd[0], miss_rnd[1]);
        fprintf(f, "  \"prefetch_mpps\": {");
        for (unsigned i = 0; i < 3; i++)
            fprintf(f,
                    "%s\"%u\": {\"off\": %.3f, \"on\": %.3f, \"off_min\": %.3f, "
                    "\"off_max\": %.3f, \"on_min\": %.3f, \"on_max\": %.3f}",
                    i ? ", " : "", pf_flows[i], pf[0][i], pf[1][i], pf_min[0][i], pf_max[0][i],
                    pf_min[1][i], pf_max[1][i]);
        fprintf(f, ", \"classifier_16k_megaflows\": {\"off\": %.3f, \"on\": %.3f}},\n", pfc[0],
                pfc[1]);
        if (ipp_loop > 0)
            fprintf(f,
                    "  \"callgrind_instructions_per_packet_1flow\": %.1f,\n"
                    "  \"callgrind_instructions_per_packet_1flow_loop\": %.1f,\n",
                    ipp_lookup, ipp_loop);
        else
            fprintf(f, "  \"callgrind_instructions_per_packet_1flow\": null,\n");
        fprintf(f,
                "  \"memory_bytes\": {\"emc\": %zu, \"smc\": %zu, \"megaflow_table_reserved\": %zu, "
                "\"megaflow_table_touched\": %zu, \"classifier\": %zu, \"total\": %zu}\n}\n",
                mem.emc, mem.smc, mem.megaflows, mem.megaflows_touched, mem.classifier,
                mem.total);
        fclose(f);
    }
    return b->sink == 42 ? 3 : 0; /* keep the forwarding work observable */
}
