/* test_pcap.c: the libpcap "pcap" backend, on files written by the test
 * into a private temporary directory. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <pcap/pcap.h>

#include "backends/pcap/netdev-pcap.h"
#include "netdev-provider.h"
#include "packet.h"

#define MAGIC_MICRO 0xa1b2c3d4u
#define MAGIC_NANO 0xa1b23c4du

struct fixture {
    char dir[64];
};

/* ---- writing fixture files ----------------------------------------------- */

struct rec {
    uint32_t sec, frac; /* frac: us or ns, per the file's magic */
    uint32_t caplen, len;
    const uint8_t *data;
};

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16
           | (uint32_t)p[3] << 24;
}

/* Builds a pcap image in buf; returns its size. */
static size_t pcap_image(uint8_t *buf, size_t size, uint32_t magic,
                         uint32_t linktype, const struct rec *recs, size_t n)
{
    assert_true(size >= 24);
    put32(buf, magic);
    buf[4] = 2, buf[5] = 0, buf[6] = 4, buf[7] = 0;
    put32(buf + 8, 0);
    put32(buf + 12, 0);
    put32(buf + 16, 65535);
    put32(buf + 20, linktype);
    size_t off = 24;
    for (size_t i = 0; i < n; i++) {
        assert_true(off + 16 + recs[i].caplen <= size);
        put32(buf + off, recs[i].sec);
        put32(buf + off + 4, recs[i].frac);
        put32(buf + off + 8, recs[i].caplen);
        put32(buf + off + 12, recs[i].len);
        memcpy(buf + off + 16, recs[i].data, recs[i].caplen);
        off += 16 + recs[i].caplen;
    }
    return off;
}

static void path_in(const struct fixture *fx, const char *name, char *buf,
                    size_t size)
{
    snprintf(buf, size, "%s/%s", fx->dir, name);
}

static void write_file(const struct fixture *fx, const char *name,
                       const uint8_t *data, size_t len)
{
    char path[128];
    path_in(fx, name, path, sizeof path);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

/* Writes a pcap file; returns its size. */
static size_t write_pcap(const struct fixture *fx, const char *name,
                         uint32_t magic, uint32_t linktype,
                         const struct rec *recs, size_t n)
{
    static uint8_t buf[1 << 16];
    size_t len = pcap_image(buf, sizeof buf, magic, linktype, recs, n);
    write_file(fx, name, buf, len);
    return len;
}

/* Reads a whole file; returns its size (buf must be large enough). */
static size_t read_file(const struct fixture *fx, const char *name,
                        uint8_t *buf, size_t size)
{
    char path[128];
    path_in(fx, name, path, sizeof path);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t n = fread(buf, 1, size, f);
    fclose(f);
    return n;
}

/* A frame of 'len' bytes: Ethernet/IPv4 ethertype, byte 14 = tag, the rest a
 * pattern. */
static void mk_frame(uint8_t *f, size_t len, uint8_t tag)
{
    for (size_t i = 0; i < len; i++)
        f[i] = (uint8_t)(i * 7 + tag);
    f[12] = 0x08;
    f[13] = 0x00;
    f[14] = tag;
}

/* ---- opening ports ------------------------------------------------------- */

static struct netdev *open_pcap_caps(const struct fixture *fx,
                                     const char *const *kv, bool caps_set,
                                     uint32_t caps, char *err, size_t errlen)
{
    struct netdev_opt opts[16];
    char keys[16][64];
    size_t n = 0;
    for (; kv && kv[n]; n++) {
        assert_true(n < 16);
        const char *eq = strchr(kv[n], '=');
        assert_non_null(eq);
        snprintf(keys[n], sizeof keys[n], "%.*s", (int)(eq - kv[n]), kv[n]);
        opts[n].key = keys[n];
        opts[n].value = eq + 1;
        opts[n].line = 0;
    }
    struct netdev_args args = {
        .opts = opts,
        .n_opts = n,
        .base_dir = fx->dir,
        .out_dir = fx->dir,
        .caps_set = caps_set,
        .caps = {.flags = caps},
    };
    return netdev_open("p0", "pcap", &args, err, errlen);
}

static struct netdev *open_pcap(const struct fixture *fx, const char *const *kv)
{
    char err[512] = "";
    struct netdev *dev = open_pcap_caps(fx, kv, false, 0, err, sizeof err);
    if (!dev)
        fail_msg("open failed: %s", err);
    return dev;
}

/* Expects open to fail; the message must contain want1 and want2 (if set). */
static void expect_open_error(const struct fixture *fx, const char *const *kv,
                              const char *want1, const char *want2)
{
    char err[512] = "";
    struct netdev *dev = open_pcap_caps(fx, kv, false, 0, err, sizeof err);
    if (dev) {
        netdev_close(dev);
        fail_msg("open with '%s' succeeded", kv[0]);
    }
    if (!strstr(err, want1) || (want2 && !strstr(err, want2)))
        fail_msg("error '%s' lacks '%s' / '%s'", err, want1,
                 want2 ? want2 : "");
}

static int rx_burst(struct netdev *dev, struct pkt_batch *b, uint64_t now)
{
    return dev->class->rxq_recv(dev, 0, b, now);
}

static int send_pkts(struct netdev *dev, struct pkt **pkts, int n)
{
    return dev->class->send(dev, 0, pkts, n, PKT_BATCH_F_PARTIAL);
}

static int setup(void **state)
{
    struct fixture *fx = calloc(1, sizeof *fx);
    assert_non_null(fx);
    snprintf(fx->dir, sizeof fx->dir, "/tmp/fs_test_pcap_XXXXXX");
    assert_non_null(mkdtemp(fx->dir));
    netdev_pcap_register();
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fx = *state;
    DIR *d = opendir(fx->dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            char path[384];
            snprintf(path, sizeof path, "%s/%s", fx->dir, e->d_name);
            unlink(path);
        }
        closedir(d);
    }
    rmdir(fx->dir);
    free(fx);
    netdev_unregister_all();
    return 0;
}

/* ---- rx from files ------------------------------------------------------ */

static void test_rx_basic_ns_burst_peek_eof(void **state)
{
    struct fixture *fx = *state;
    uint8_t f[5][80];
    struct rec recs[5];
    for (int i = 0; i < 5; i++) {
        uint32_t len = 60 + (uint32_t)i * 5;
        mk_frame(f[i], len, (uint8_t)i);
        recs[i] = (struct rec){.sec = 100 + (uint32_t)i / 2,
                               .frac = 1000u * (uint32_t)i + 7,
                               .caplen = len,
                               .len = len,
                               .data = f[i]};
    }
    write_pcap(fx, "in.pcap", MAGIC_NANO, 1, recs, 5);
    struct netdev *dev =
        open_pcap(fx, (const char *const[]){"rx=in.pcap", "burst=2", NULL});
    assert_int_equal(dev->class->n_rxq(dev), 1);
    assert_int_equal(dev->class->n_txq(dev), 0);
    assert_true(netdev_link_up(dev));

    uint64_t ts[5];
    for (int i = 0; i < 5; i++)
        ts[i] = recs[i].sec * 1000000000ull + recs[i].frac;
    uint64_t next = 0;
    assert_int_equal(netdev_rxq_peek(dev, 0, &next), NETDEV_RX_READY);
    assert_int_equal(next, ts[0]);

    struct pkt_batch b;
    pkt_batch_init(&b);
    assert_int_equal(rx_burst(dev, &b, ts[0] - 1), 0);
    assert_int_equal(rx_burst(dev, &b, ts[2]), 2); /* burst */
    assert_int_equal(rx_burst(dev, &b, ts[2]), 1);
    assert_int_equal(rx_burst(dev, &b, ts[2]), 0); /* ts[3] > now */
    assert_int_equal(netdev_rxq_peek(dev, 0, &next), NETDEV_RX_READY);
    assert_int_equal(next, ts[3]);
    assert_int_equal(rx_burst(dev, &b, UINT64_MAX), 2);
    assert_int_equal(netdev_rxq_peek(dev, 0, &next), NETDEV_RX_EOF);
    assert_int_equal(rx_burst(dev, &b, UINT64_MAX), 0);
    assert_int_equal(b.count, 5);
    uint64_t bytes = 0;
    for (int i = 0; i < 5; i++) {
        struct pkt *p = b.pkts[i];
        assert_int_equal(p->ts, ts[i]);
        assert_int_equal(p->len, recs[i].len);
        assert_memory_equal(p->data, f[i], p->len);
        assert_int_equal(p->flags, 0);
        assert_int_equal(p->l3_ofs, PKT_OFS_NONE);
        assert_int_equal(p->csum[CSUM_L_OUTER_L4], CSUM_UNKNOWN);
        assert_true(pkt_headroom(p) >= PKT_HEADROOM);
        bytes += p->len;
    }
    pkt_batch_free(&b);
    struct netdev_stats st;
    netdev_get_stats(dev, &st);
    assert_int_equal(st.rx_packets, 5);
    assert_int_equal(st.rx_bytes, bytes);
    assert_int_equal(st.rx_errors, 0);
    assert_null(netdev_rx_error(dev));
    netdev_close(dev);
}

static void test_rx_micro_file_and_default_burst(void **state)
{
    struct fixture *fx = *state;
    static uint8_t f[60];
    mk_frame(f, sizeof f, 1);
    struct rec recs[40];
    for (int i = 0; i < 40; i++)
        recs[i] = (struct rec){.sec = 5,
                               .frac = 999990u + (uint32_t)i % 10,
                               .caplen = 60,
                               .len = 60,
                               .data = f};
    write_pcap(fx, "us.pcap", MAGIC_MICRO, 1, recs, 40);
    struct netdev *dev =
        open_pcap(fx, (const char *const[]){"rx=us.pcap", NULL});
    struct pkt_batch b;
    pkt_batch_init(&b);
    assert_int_equal(rx_burst(dev, &b, UINT64_MAX), 32);
    assert_int_equal(b.pkts[3]->ts, 5 * 1000000000ull + 999993000ull);
    pkt_batch_free(&b);
    assert_int_equal(rx_burst(dev, &b, UINT64_MAX), 8);
    pkt_batch_free(&b);
    netdev_close(dev);
}

static void test_rx_written_by_libpcap(void **state)
{
    struct fixture *fx = *state;
    char path[128];
    path_in(fx, "lib.pcap", path, sizeof path);
    pcap_t *dead = pcap_open_dead_with_tstamp_precision(
        DLT_EN10MB, 65535, PCAP_TSTAMP_PRECISION_NANO);
    assert_non_null(dead);
    pcap_dumper_t *d = pcap_dump_open(dead, path);
    assert_non_null(d);
    uint8_t f[64];
    mk_frame(f, sizeof f, 9);
    struct pcap_pkthdr h = {.caplen = 64, .len = 64};
    h.ts.tv_sec = 1700000000;
    h.ts.tv_usec = 123456789; /* ns with nano precision */
    pcap_dump((u_char *)d, &h, f);
    pcap_dump_close(d);
    pcap_close(dead);

    struct netdev *dev =
        open_pcap(fx, (const char *const[]){"rx=lib.pcap", NULL});
    struct pkt_batch b;
    pkt_batch_init(&b);
    assert_int_equal(rx_burst(dev, &b, UINT64_MAX), 1);
    assert_int_equal(b.pkts[0]->ts, 1700000000123456789ull);
    assert_memory_equal(b.pkts[0]->data, f, 64);
    pkt_batch_free(&b);
    netdev_close(dev);
}

static void check_truncated_file(struct fixture *fx, size_t cut_back)
{
    uint8_t f[3][100];
    struct rec recs[3];
    for (int i = 0; i < 3; i++) {
        mk_frame(f[i], 100, (uint8_t)i);
        recs[i] = (struct rec){.sec = 1,
                               .frac = (uint32_t)i,
                               .caplen = 100,
                               .len = 100,
                               .data = f[i]};
    }
    static uint8_t img[1024];
    size_t len = pcap_image(img, sizeof img, MAGIC_NANO, 1, recs, 3);
    write_file(fx, "cut.pcap", img, len - cut_back);

    struct netdev *dev =
        open_pcap(fx, (const char *const[]){"rx=cut.pcap", NULL});
    struct pkt_batch b;
    pkt_batch_init(&b);
    assert_int_equal(rx_burst(dev, &b, UINT64_MAX), 2);
    assert_memory_equal(b.pkts[1]->data, f[1], 100);
    uint64_t ts;
    assert_int_equal(netdev_rxq_peek(dev, 0, &ts), NETDEV_RX_EOF);
    assert_int_equal(rx_burst(dev, &b, UINT64_MAX), 0);
    const char *e = netdev_rx_error(dev);
    assert_non_null(e);
    assert_non_null(strstr(e, "cut.pcap: "));
    assert_non_null(strstr(e, "truncated"));
    struct netdev_stats st;
    netdev_get_stats(dev, &st);
    assert_int_equal(st.rx_packets, 2);
    assert_int_equal(st.rx_errors, 1);
    pkt_batch_free(&b);
    netdev_close(dev);
}

static void test_rx_truncated_file(void **state)
{
    check_truncated_file(*state, 40);  /* cut in the third record's data */
    check_truncated_file(*state, 110); /* cut in its record header */
}

static void test_rx_error_after_lookahead(void **state)
{
    /* The record before the cut is delivered even though the error is found
     * while reading ahead of it. */
    struct fixture *fx = *state;
    uint8_t f[60];
    mk_frame(f, 60, 3);
    struct rec recs[2] = {
        {.sec = 1, .frac = 0, .caplen = 60, .len = 60, .data = f},
        {.sec = 2, .frac = 0, .caplen = 60, .len = 60, .data = f},
    };
    static uint8_t img[512];
    size_t len = pcap_image(img, sizeof img, MAGIC_NANO, 1, recs, 2);
    write_file(fx, "cut2.pcap", img, len - 10);
    struct netdev *dev =
        open_pcap(fx, (const char *const[]){"rx=cut2.pcap", NULL});
    uint64_t ts;
    assert_int_equal(netdev_rxq_peek(dev, 0, &ts), NETDEV_RX_READY);
    assert_int_equal(ts, 1000000000ull);
    struct pkt_batch b;
    pkt_batch_init(&b);
    /* The look-ahead for the second record hits the cut. */
    assert_int_equal(rx_burst(dev, &b, 1500000000ull), 1);
    assert_non_null(netdev_rx_error(dev));
    assert_int_equal(netdev_rxq_peek(dev, 0, &ts), NETDEV_RX_EOF);
    assert_non_null(strstr(netdev_rx_error(dev), "tried to read 60 captured"));
    pkt_batch_free(&b);
    netdev_close(dev);
}

/* rx-loop: N passes over the file, times relative to its first record
 * from the first poll, each pass one mean gap after the last; forever
 * keeps going; an empty file ends at once. */
static void test_rx_loop(void **state)
{
    struct fixture *fx = *state;
    uint8_t f[3][60];
    struct rec recs[3];
    const uint32_t at[3] = {0, 10, 30}; /* ns after the first: mean gap 15 */
    for (int i = 0; i < 3; i++) {
        mk_frame(f[i], 60, (uint8_t)i);
        recs[i] = (struct rec){.sec = 1700000000, .frac = 500 + at[i], .caplen = 60,
                               .len = 60, .data = f[i]};
    }
    write_pcap(fx, "loop.pcap", MAGIC_NANO, 1, recs, 3);
    struct netdev *dev =
        open_pcap(fx, (const char *const[]){"rx=loop.pcap", "rx-loop=3", NULL});
    struct pkt_batch b;
    pkt_batch_init(&b);
    const uint64_t t0 = 5000; /* the first poll */
    assert_int_equal(rx_burst(dev, &b, t0), 1);
    assert_int_equal(rx_burst(dev, &b, t0 + 10), 1);
    assert_int_equal(rx_burst(dev, &b, t0 + 44), 1); /* t0 + 30 */
    uint64_t next;
    assert_int_equal(netdev_rxq_peek(dev, 0, &next), NETDEV_RX_READY);
    assert_int_equal(next, t0 + 45); /* pass 2: 30 + 15 */
    assert_int_equal(rx_burst(dev, &b, UINT64_MAX), 6);
    assert_int_equal(rx_burst(dev, &b, UINT64_MAX), 0);
    assert_int_equal(netdev_rxq_peek(dev, 0, &next), NETDEV_RX_EOF);
    assert_int_equal(b.count, 9);
    for (unsigned i = 0; i < 9; i++) {
        assert_int_equal(b.pkts[i]->ts, t0 + 45 * (i / 3) + at[i % 3]);
        assert_memory_equal(b.pkts[i]->data, f[i % 3], 60);
    }
    pkt_batch_free(&b);
    struct netdev_stats st;
    netdev_get_stats(dev, &st);
    assert_int_equal(st.rx_packets, 9);
    assert_null(netdev_rx_error(dev));
    netdev_close(dev);

    /* forever: 1000 full bursts (over 10000 passes) and counting. */
    dev = open_pcap(fx, (const char *const[]){"rx=loop.pcap", "rx-loop=forever", NULL});
    unsigned got = 0;
    const uint64_t t1 = 1000000000000000ull;
    for (unsigned i = 0; i < 1001; i++) {
        pkt_batch_init(&b);
        /* The first poll starts the loop at t1: only the first record is due. */
        assert_int_equal(rx_burst(dev, &b, i ? t1 + 1000000000000ull : t1), i ? 32 : 1);
        for (unsigned k = 0; k < b.count; k++, got++)
            assert_int_equal(b.pkts[k]->ts, t1 + 45 * (got / 3) + at[got % 3]);
        pkt_batch_free(&b);
    }
    assert_int_equal(netdev_rxq_peek(dev, 0, &next), NETDEV_RX_READY);
    netdev_close(dev);

    /* An empty file ends at once, forever or not. */
    write_pcap(fx, "empty.pcap", MAGIC_NANO, 1, NULL, 0);
    dev = open_pcap(fx, (const char *const[]){"rx=empty.pcap", "rx-loop=forever", NULL});
    pkt_batch_init(&b);
    assert_int_equal(rx_burst(dev, &b, UINT64_MAX), 0);
    assert_int_equal(netdev_rxq_peek(dev, 0, &next), NETDEV_RX_EOF);
    netdev_close(dev);

    expect_open_error(fx, (const char *const[]){"tx=o.pcap", "rx-loop=2", NULL},
                      "'rx-loop'", "needs 'rx'");
    expect_open_error(fx, (const char *const[]){"rx=loop.pcap", "rx-loop=0", NULL},
                      "'rx-loop'", "forever");
    expect_open_error(fx, (const char *const[]){"rx=loop.pcap", "rx-loop=always", NULL},
                      "'rx-loop'", "forever");
}

static void test_rx_caplen_short(void **state)
{
    struct fixture *fx = *state;
    uint8_t f[64];
    mk_frame(f, 64, 1);
    struct rec recs[2] = {
        {.sec = 1, .caplen = 40, .len = 1500, .data = f},
        {.sec = 1, .caplen = 64, .len = 64, .data = f},
    };
    write_pcap(fx, "snap.pcap", MAGIC_NANO, 1, recs, 2);
    struct netdev *dev =
        open_pcap(fx, (const char *const[]){"rx=snap.pcap", NULL});
    struct pkt_batch b;
    pkt_batch_init(&b);
    assert_int_equal(rx_burst(dev, &b, UINT64_MAX), 2);
    assert_int_equal(b.pkts[0]->len, 40);
    assert_true(b.pkts[0]->flags & PKT_F_TRUNCATED);
    assert_memory_equal(b.pkts[0]->data, f, 40);
    assert_false(b.pkts[1]->flags & PKT_F_TRUNCATED);
    pkt_batch_free(&b);
    netdev_close(dev);
}

static void test_rx_open_errors(void **state)
{
    struct fixture *fx = *state;
    char full[160];

    path_in(fx, "missing.pcap", full, sizeof full);
    expect_open_error(fx, (const char *const[]){"rx=missing.pcap", NULL}, full,
                      "No such file or directory");

    static const uint8_t junk[32] = "this is not a pcap file at all..";
    write_file(fx, "junk.pcap", junk, sizeof junk);
    path_in(fx, "junk.pcap", full, sizeof full);
    expect_open_error(fx, (const char *const[]){"rx=junk.pcap", NULL}, full,
                      "unknown file format");

    static uint8_t hdr[24];
    pcap_image(hdr, sizeof hdr, MAGIC_NANO, 1, NULL, 0);
    write_file(fx, "short.pcap", hdr, 10);
    path_in(fx, "short.pcap", full, sizeof full);
    expect_open_error(fx, (const char *const[]){"rx=short.pcap", NULL}, full,
                      "truncated");

    write_file(fx, "empty.pcap", hdr, 0);
    expect_open_error(fx, (const char *const[]){"rx=empty.pcap", NULL},
                      "empty.pcap", NULL);

    /* An absolute path ignores base_dir. */
    expect_open_error(fx, (const char *const[]){"rx=/nonexistent/x.pcap", NULL},
                      "'/nonexistent/x.pcap'", NULL);
}

static void test_rx_linktype_mismatch(void **state)
{
    struct fixture *fx = *state;
    uint8_t f[60];
    mk_frame(f, 60, 0);
    struct rec r = {.sec = 1, .caplen = 60, .len = 60, .data = f};
    write_pcap(fx, "user0.pcap", MAGIC_NANO, 147, &r, 1);
    write_pcap(fx, "eth.pcap", MAGIC_NANO, 1, &r, 1);
    write_pcap(fx, "sll.pcap", MAGIC_NANO, 113, &r, 1);

    expect_open_error(fx, (const char *const[]){"rx=user0.pcap", NULL},
                      "user0.pcap", "link type 147");
    expect_open_error(fx, (const char *const[]){"rx=user0.pcap", NULL},
                      "expected 1 ", NULL);
    expect_open_error(
        fx, (const char *const[]){"rx=eth.pcap", "vnet-hdr=true", NULL},
        "link type 1 ", "expected 147");
    expect_open_error(
        fx, (const char *const[]){"rx=eth.pcap", "vnet-hdr=true", NULL},
        "eth.pcap", NULL);
    expect_open_error(fx, (const char *const[]){"rx=sll.pcap", NULL},
                      "link type 113", "expected 1 ");
}

/* ---- vnet-hdr ----------------------------------------------------------- */

/* A vnet-hdr record: header fields then a copy of frame. Returns its length. */
static uint32_t vnet_rec(uint8_t *out, uint8_t flags, uint8_t gso,
                         uint16_t cstart, uint16_t coff, const uint8_t *frame,
                         uint32_t flen)
{
    memset(out, 0, 12);
    out[0] = flags;
    out[1] = gso;
    out[2] = 14 + 20 + 20; /* hdr_len: ignored without GSO */
    out[6] = (uint8_t)cstart;
    out[7] = (uint8_t)(cstart >> 8);
    out[8] = (uint8_t)coff;
    out[9] = (uint8_t)(coff >> 8);
    out[10] = 1; /* num_buffers */
    memcpy(out + 12, frame, flen);
    return 12 + flen;
}

static void test_vnet_rx(void **state)
{
    struct fixture *fx = *state;
    uint8_t frame[80];
    mk_frame(frame, sizeof frame, 0x42);
    static uint8_t r[8][128];
    uint32_t n[8];
    n[0] = vnet_rec(r[0], 1, 0, 34, 16, frame, 80); /* NEEDS_CSUM (TCP) */
    n[1] = vnet_rec(r[1], 2, 0, 0, 0, frame, 80);   /* DATA_VALID */
    n[2] = vnet_rec(r[2], 0, 0, 0, 0, frame, 80);   /* nothing */
    memcpy(r[3], r[2], 8);
    n[3] = 8;                                       /* short: dropped */
    n[4] = vnet_rec(r[4], 1, 1, 34, 16, frame, 80); /* GSO TCPv4: dropped */
    n[5] = vnet_rec(r[5], 1, 0, 70, 9, frame, 80);  /* 70+9+2 > 80: dropped */
    n[6] = vnet_rec(r[6], 1, 0, 70, 8, frame, 80);  /* 70+8+2 = 80: ok */
    n[7] = vnet_rec(r[7], 3, 0, 34, 6, frame, 80);  /* both: NEEDS_CSUM wins */
    struct rec recs[8];
    for (int i = 0; i < 8; i++)
        recs[i] = (struct rec){.sec = 1,
                               .frac = (uint32_t)i,
                               .caplen = n[i],
                               .len = n[i],
                               .data = r[i]};
    write_pcap(fx, "vnet.pcap", MAGIC_NANO, 147, recs, 8);

    struct netdev *dev = open_pcap(
        fx, (const char *const[]){"rx=vnet.pcap", "vnet-hdr=on", NULL});
    struct pkt_batch b;
    pkt_batch_init(&b);
    assert_int_equal(rx_burst(dev, &b, UINT64_MAX), 5);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(b.pkts[i]->len, 80);
        assert_memory_equal(b.pkts[i]->data, frame, 80);
    }
    struct pkt *p = b.pkts[0];
    assert_int_equal(p->ts, 1000000000ull);
    assert_int_equal(p->flags, PKT_F_VNET_CSUM);
    assert_int_equal(p->csum_start, 34);
    assert_int_equal(p->csum_offset, 16);
    assert_int_equal(p->csum[CSUM_L_OUTER_L4], CSUM_PARTIAL);
    assert_int_equal(p->csum[CSUM_L_OUTER_IP], CSUM_UNKNOWN);

    p = b.pkts[1];
    assert_int_equal(p->flags, 0);
    assert_int_equal(p->csum[CSUM_L_OUTER_L4], CSUM_GOOD);

    p = b.pkts[2];
    assert_int_equal(p->flags, 0);
    assert_int_equal(p->csum[CSUM_L_OUTER_L4], CSUM_UNKNOWN);
    assert_int_equal(p->csum_start, 0);

    p = b.pkts[3];
    assert_int_equal(p->ts, 1000000006ull);
    assert_int_equal(p->flags, PKT_F_VNET_CSUM);
    assert_int_equal(p->csum_start, 70);
    assert_int_equal(p->csum_offset, 8);

    p = b.pkts[4];
    assert_int_equal(p->flags, PKT_F_VNET_CSUM);
    assert_int_equal(p->csum[CSUM_L_OUTER_L4], CSUM_PARTIAL);
    assert_int_equal(p->csum_offset, 6);

    struct netdev_stats st;
    netdev_get_stats(dev, &st);
    assert_int_equal(st.rx_packets, 5);
    assert_int_equal(st.rx_bytes, 5 * 80);
    assert_int_equal(st.rx_errors, 3);
    assert_int_equal(st.rx_dropped, 3);
    assert_null(netdev_rx_error(dev)); /* bad records do not end reception */
    pkt_batch_free(&b);
    netdev_close(dev);
}

static void test_vnet_rx_truncated_record(void **state)
{
    struct fixture *fx = *state;
    uint8_t frame[80], rec[128];
    mk_frame(frame, sizeof frame, 1);
    uint32_t n = vnet_rec(rec, 2, 0, 0, 0, frame, 80);
    struct rec r = {.sec = 1, .caplen = n - 30, .len = n, .data = rec};
    write_pcap(fx, "vcut.pcap", MAGIC_NANO, 147, &r, 1);
    struct netdev *dev = open_pcap(
        fx, (const char *const[]){"rx=vcut.pcap", "vnet-hdr=1", NULL});
    struct pkt_batch b;
    pkt_batch_init(&b);
    assert_int_equal(rx_burst(dev, &b, UINT64_MAX), 1);
    assert_int_equal(b.pkts[0]->len, 50);
    assert_true(b.pkts[0]->flags & PKT_F_TRUNCATED);
    pkt_batch_free(&b);
    netdev_close(dev);
}

/* A tx packet of 'len' bytes with rx time ts. */
static struct pkt *mk_pkt(uint32_t len, uint8_t tag, uint64_t ts)
{
    uint8_t f[256];
    assert_true(len <= sizeof f);
    mk_frame(f, len, tag);
    struct pkt *p = pkt_from_data(f, len);
    assert_non_null(p);
    p->ts = ts;
    return p;
}

static const uint8_t global_hdr_eth[24] = {
    0xd4, 0xc3, 0xb2, 0xa1, 0x02, 0x00, 0x04, 0x00, 0,    0,    0,    0,
    0,    0,    0,    0,    0xff, 0xff, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
};

/* Opens a port announcing guest-csum (a VM peer that accepts NEEDS_CSUM). */
static struct netdev *open_pcap_guest(const struct fixture *fx, const char *const *kv)
{
    char err[512] = "";
    struct netdev *dev =
        open_pcap_caps(fx, kv, true, NETDEV_TX_GUEST_CSUM, err, sizeof err);
    if (!dev)
        fail_msg("open failed: %s", err);
    return dev;
}

static void test_vnet_tx(void **state)
{
    struct fixture *fx = *state;
    struct netdev *dev = open_pcap_guest(
        fx, (const char *const[]){"tx=vout.pcap", "vnet-hdr=true", NULL});
    struct pkt *p[4];
    p[0] = mk_pkt(74, 1, 1000); /* PARTIAL + VNET_CSUM: NEEDS_CSUM */
    p[0]->csum[CSUM_L_OUTER_L4] = CSUM_PARTIAL;
    p[0]->flags |= PKT_F_VNET_CSUM;
    p[0]->csum_start = 0x0122;
    p[0]->csum_offset = 0x0010;
    p[1] = mk_pkt(60, 2, 2000); /* PARTIAL without the location: refused */
    p[1]->csum[CSUM_L_OUTER_L4] = CSUM_PARTIAL;
    p[1]->csum_start = 34;
    p[2] = mk_pkt(60, 3, 3000); /* location but GOOD: zero */
    p[2]->csum[CSUM_L_OUTER_L4] = CSUM_GOOD;
    p[2]->flags |= PKT_F_VNET_CSUM;
    p[2]->csum_start = 34;
    p[3] = mk_pkt(60, 4, 4000); /* no PARTIAL layer: zero */
    p[3]->flags |= PKT_F_VNET_CSUM;
    assert_int_equal(send_pkts(dev, p, 4), 4);
    struct netdev_stats st;
    netdev_get_stats(dev, &st);
    assert_int_equal(st.tx_offload_contract, 1);
    assert_int_equal(st.tx_packets, 3);
    netdev_close(dev);

    static uint8_t buf[2048];
    size_t len = read_file(fx, "vout.pcap", buf, sizeof buf);
    assert_int_equal(len, 24 + 3 * (16 + 12) + 74 + 2 * 60);
    uint8_t ghdr[24];
    memcpy(ghdr, global_hdr_eth, 24);
    ghdr[20] = 147;
    assert_memory_equal(buf, ghdr, 24);

    static const uint8_t needs[12] = {1,    0,    0,    0, 0, 0,
                                      0x22, 0x01, 0x10, 0, 0, 0};
    static const uint8_t zero[12];
    size_t off = 24;
    const int sent[3] = {0, 2, 3};
    const uint32_t flen[4] = {74, 60, 60, 60};
    for (int k = 0; k < 3; k++) {
        int i = sent[k];
        assert_int_equal(get32(buf + off + 4), (uint32_t)(i + 1)); /* us */
        assert_int_equal(get32(buf + off + 8), flen[i] + 12);
        assert_int_equal(get32(buf + off + 12), flen[i] + 12);
        assert_memory_equal(buf + off + 16, i == 0 ? needs : zero, 12);
        uint8_t f[80];
        mk_frame(f, flen[i], (uint8_t)(i + 1));
        assert_memory_equal(buf + off + 28, f, flen[i]);
        off += 16 + 12 + flen[i];
    }
}

static void test_vnet_roundtrip(void **state)
{
    /* What the port writes with vnet-hdr, it reads back the same. */
    struct fixture *fx = *state;
    struct netdev *dev = open_pcap_guest(
        fx, (const char *const[]){"tx=rt.pcap", "vnet-hdr=true", NULL});
    struct pkt *p = mk_pkt(90, 5, 7000000123ull);
    p->csum[CSUM_L_OUTER_L4] = CSUM_PARTIAL;
    p->flags |= PKT_F_VNET_CSUM;
    p->csum_start = 34;
    p->csum_offset = 6;
    assert_int_equal(send_pkts(dev, &p, 1), 1);
    netdev_close(dev);

    dev = open_pcap(fx,
                    (const char *const[]){"rx=rt.pcap", "vnet-hdr=true", NULL});
    struct pkt_batch b;
    pkt_batch_init(&b);
    assert_int_equal(rx_burst(dev, &b, UINT64_MAX), 1);
    p = b.pkts[0];
    assert_int_equal(p->ts, 7000000000ull); /* us precision on tx */
    assert_int_equal(p->len, 90);
    assert_int_equal(p->flags, PKT_F_VNET_CSUM);
    assert_int_equal(p->csum_start, 34);
    assert_int_equal(p->csum_offset, 6);
    assert_int_equal(p->csum[CSUM_L_OUTER_L4], CSUM_PARTIAL);
    pkt_batch_free(&b);
    netdev_close(dev);
}

/* ---- tx to files -------------------------------------------------------- */

static void test_tx_file_exact(void **state)
{
    struct fixture *fx = *state;
    struct netdev *dev =
        open_pcap(fx, (const char *const[]){"tx=out.pcap", NULL});
    assert_int_equal(dev->class->n_rxq(dev), 0);
    assert_int_equal(dev->class->n_txq(dev), 1);

    /* Created with just its header at open. */
    static uint8_t buf[4096];
    assert_int_equal(read_file(fx, "out.pcap", buf, sizeof buf), 24);
    assert_memory_equal(buf, global_hdr_eth, 24);

    struct pkt *p[2] = {mk_pkt(60, 0xab, 1234567891999ull),
                        mk_pkt(100, 0xcd, 1234567892000ull)};
    assert_int_equal(send_pkts(dev, p, 2), 2);
    /* Flushed after the send call: visible while the port is open. */
    size_t len = read_file(fx, "out.pcap", buf, sizeof buf);
    assert_int_equal(len, 24 + 16 + 60 + 16 + 100);

    uint8_t expect[24 + 16 + 60 + 16 + 100];
    memcpy(expect, global_hdr_eth, 24);
    /* 1234567891999 ns -> 1234 s + 567891 us (truncated, not rounded). */
    static const uint8_t rh1[16] = {0xd2, 0x04, 0, 0, 0x53, 0xaa, 0x08, 0,
                                    60,   0,    0, 0, 60,   0,    0,    0};
    memcpy(expect + 24, rh1, 16);
    mk_frame(expect + 40, 60, 0xab);
    static const uint8_t rh2[16] = {0xd2, 0x04, 0, 0, 0x54, 0xaa, 0x08, 0,
                                    100,  0,    0, 0, 100,  0,    0,    0};
    memcpy(expect + 100, rh2, 16);
    mk_frame(expect + 116, 100, 0xcd);
    assert_memory_equal(buf, expect, sizeof expect);

    struct netdev_stats st;
    netdev_get_stats(dev, &st);
    assert_int_equal(st.tx_packets, 2);
    assert_int_equal(st.tx_bytes, 160);
    assert_int_equal(st.tx_errors, 0);

    /* No rx: nothing to receive, EOF at once. */
    struct pkt_batch b;
    pkt_batch_init(&b);
    assert_int_equal(rx_burst(dev, &b, UINT64_MAX), 0);
    uint64_t ts;
    assert_int_equal(netdev_rxq_peek(dev, 0, &ts), NETDEV_RX_EOF);
    assert_int_equal(send_pkts(dev, p, 0), 0);
    netdev_close(dev);
    assert_int_equal(read_file(fx, "out.pcap", buf, sizeof buf), sizeof expect);

    /* libpcap reads it back as a standard us pcap. */
    char path[128], ebuf[PCAP_ERRBUF_SIZE];
    path_in(fx, "out.pcap", path, sizeof path);
    pcap_t *r = pcap_open_offline(path, ebuf);
    assert_non_null(r);
    assert_int_equal(pcap_datalink(r), DLT_EN10MB);
    assert_int_equal(pcap_snapshot(r), 65535);
    struct pcap_pkthdr *h;
    const u_char *d;
    assert_int_equal(pcap_next_ex(r, &h, &d), 1);
    assert_int_equal(h->ts.tv_sec, 1234);
    assert_int_equal(h->ts.tv_usec, 567891);
    assert_int_equal(pcap_next_ex(r, &h, &d), 1);
    assert_int_equal(h->ts.tv_usec, 567892);
    assert_int_equal(pcap_next_ex(r, &h, &d), PCAP_ERROR_BREAK);
    pcap_close(r);
}

static void test_tx_open_error(void **state)
{
    struct fixture *fx = *state;
    char full[160];
    path_in(fx, "nodir/out.pcap", full, sizeof full);
    expect_open_error(fx, (const char *const[]){"tx=nodir/out.pcap", NULL},
                      full, "No such file or directory");
    /* A good rx with a bad tx: the whole open fails (valgrind: no leak). */
    uint8_t f[60];
    mk_frame(f, 60, 0);
    struct rec r = {.sec = 1, .caplen = 60, .len = 60, .data = f};
    write_pcap(fx, "ok.pcap", MAGIC_NANO, 1, &r, 1);
    expect_open_error(
        fx, (const char *const[]){"rx=ok.pcap", "tx=nodir/o.pcap", NULL},
        "nodir/o.pcap", NULL);
}

static void test_tx_write_error_eio(void **state)
{
    /* A file size limit makes the flush after the first send fail; the
     * next send reports -EIO and takes nothing. */
    struct fixture *fx = *state;
    struct netdev *dev =
        open_pcap(fx, (const char *const[]){"tx=full.pcap", NULL});
    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    void (*oldsig)(int) = signal(SIGXFSZ, SIG_IGN);
    lim = old;
    lim.rlim_cur = 64;
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);

    struct pkt *p = mk_pkt(200, 1, 0);
    assert_int_equal(send_pkts(dev, &p, 1), 1); /* written (buffered), freed */
    struct netdev_stats st;
    netdev_get_stats(dev, &st);
    assert_int_equal(st.tx_errors, 1);
    p = mk_pkt(60, 2, 0);
    assert_int_equal(send_pkts(dev, &p, 1), -EIO);
    pkt_free(p);

    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, oldsig);
    netdev_close(dev);
}

static void test_rx_and_tx_same_port(void **state)
{
    struct fixture *fx = *state;
    uint8_t f[3][70];
    struct rec recs[3];
    for (int i = 0; i < 3; i++) {
        mk_frame(f[i], 70, (uint8_t)(i + 10));
        recs[i] = (struct rec){.sec = 2,
                               .frac = 1000u * (uint32_t)i,
                               .caplen = 70,
                               .len = 70,
                               .data = f[i]};
    }
    write_pcap(fx, "loop-in.pcap", MAGIC_NANO, 1, recs, 3);
    char err[512];
    struct netdev *dev = open_pcap_caps(
        fx, (const char *const[]){"rx=loop-in.pcap", "tx=loop-out.pcap", NULL},
        true, NETDEV_TX_L4_CSUM, err, sizeof err);
    assert_non_null(dev);
    assert_int_equal(dev->class->n_rxq(dev), 1);
    assert_int_equal(dev->class->n_txq(dev), 1);
    struct netdev_caps caps;
    netdev_get_caps(dev, &caps);
    assert_int_equal(caps.flags, NETDEV_TX_L4_CSUM);

    struct pkt_batch b;
    pkt_batch_init(&b);
    assert_int_equal(rx_burst(dev, &b, UINT64_MAX), 3);
    assert_int_equal(send_pkts(dev, b.pkts, b.count), 3);
    netdev_close(dev);

    static uint8_t in[1024], out[1024];
    size_t nin = read_file(fx, "loop-in.pcap", in, sizeof in);
    size_t nout = read_file(fx, "loop-out.pcap", out, sizeof out);
    assert_int_equal(nin, nout);
    /* Same records; only the magic (ns in, us out) and the fractions differ. */
    assert_int_equal(get32(out), MAGIC_MICRO);
    assert_memory_equal(out + 4, in + 4, 20);
    for (int i = 0; i < 3; i++) {
        size_t off = 24 + (size_t)i * (16 + 70);
        assert_int_equal(get32(out + off), 2);
        assert_int_equal(get32(out + off + 4), (uint32_t)i);
        assert_memory_equal(out + off + 8, in + off + 8, 8 + 70);
    }
}

static void test_send_without_tx(void **state)
{
    struct fixture *fx = *state;
    uint8_t f[60];
    mk_frame(f, 60, 0);
    struct rec r = {.sec = 1, .caplen = 60, .len = 60, .data = f};
    write_pcap(fx, "only-rx.pcap", MAGIC_NANO, 1, &r, 1);
    struct netdev *dev =
        open_pcap(fx, (const char *const[]){"rx=only-rx.pcap", NULL});
    struct pkt *p = mk_pkt(60, 1, 0);
    assert_int_equal(send_pkts(dev, &p, 1), -EOPNOTSUPP);
    pkt_free(p);
    struct netdev_caps caps;
    netdev_get_caps(dev, &caps);
    assert_int_equal(caps.flags, 0);
    netdev_close(dev);

    /* Closing with a record read ahead (peeked, not received) frees it. */
    dev = open_pcap(fx, (const char *const[]){"rx=only-rx.pcap", NULL});
    uint64_t ts;
    assert_int_equal(netdev_rxq_peek(dev, 0, &ts), NETDEV_RX_READY);
    netdev_close(dev);
}

static void test_option_errors(void **state)
{
    struct fixture *fx = *state;
    expect_open_error(fx, NULL, "pcap port needs rx, rx-iface, tx or tx-iface",
                      NULL);
    expect_open_error(fx, (const char *const[]){"burst=4", NULL},
                      "pcap port needs rx, rx-iface, tx or tx-iface", NULL);
    expect_open_error(fx, (const char *const[]){"rx=a", "rx-iface=lo", NULL},
                      "'rx'", "'rx-iface'");
    expect_open_error(fx, (const char *const[]){"tx=a", "tx-iface=lo", NULL},
                      "'tx'", "'tx-iface'");
    expect_open_error(fx, (const char *const[]){"tx=o.pcap", "burst=0", NULL},
                      "'burst'", NULL);
    expect_open_error(fx, (const char *const[]){"tx=o.pcap", "burst=33", NULL},
                      "'burst'", NULL);
    expect_open_error(
        fx, (const char *const[]){"tx=o.pcap", "vnet-hdr=maybe", NULL},
        "'vnet-hdr'", NULL);
    expect_open_error(fx, (const char *const[]){"tx=o.pcap", "speed=10", NULL},
                      "'speed'", NULL);
    expect_open_error(fx, (const char *const[]){"rx=", NULL}, "'rx'", NULL);
    expect_open_error(fx, (const char *const[]){"tx=", NULL}, "'tx'", NULL);
    expect_open_error(fx, (const char *const[]){"rx-iface=", NULL},
                      "'rx-iface'", NULL);
    expect_open_error(
        fx, (const char *const[]){"rx-iface=lo", "vnet-hdr=true", NULL},
        "'vnet-hdr'", NULL);
    char longname[5000];
    memset(longname, 'x', sizeof longname);
    memcpy(longname, "tx=", 3);
    longname[sizeof longname - 1] = '\0';
    expect_open_error(fx, (const char *const[]){longname, NULL}, "'tx'",
                      "too long");
    /* A failed open leaves no file behind for a valid tx next to a bad
     * option (options are checked before anything is opened). */
    char path[128];
    path_in(fx, "never.pcap", path, sizeof path);
    expect_open_error(fx,
                      (const char *const[]){"tx=never.pcap", "burst=x", NULL},
                      "'burst'", NULL);
    assert_int_equal(access(path, F_OK), -1);
}

static void test_register(void **state)
{
    (void)state;
    const struct netdev_class *c = netdev_class_find("pcap");
    assert_non_null(c);
    netdev_pcap_register();
    assert_ptr_equal(netdev_class_find("pcap"), c);
    assert_non_null(c->rx_error);
    assert_non_null(c->rxq_peek);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_register, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rx_basic_ns_burst_peek_eof, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rx_micro_file_and_default_burst,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_rx_written_by_libpcap, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rx_truncated_file, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rx_error_after_lookahead, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rx_caplen_short, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rx_loop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rx_open_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rx_linktype_mismatch, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_vnet_rx, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vnet_rx_truncated_record, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_vnet_tx, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vnet_roundtrip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tx_file_exact, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tx_open_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tx_write_error_eio, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rx_and_tx_same_port, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_send_without_tx, setup, teardown),
        cmocka_unit_test_setup_teardown(test_option_errors, setup, teardown),
    };
    return cmocka_run_group_tests_name("pcap", tests, NULL, NULL);
}
