/* netdev.c: the backend registry, the client side of ports (netdev.h) and
 * the option helpers backends use (netdev-provider.h). */
#include "netdev-provider.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NETDEV_MAX_CLASSES 16

/* The registry of backend types. It is filled once at start-up (main() or a
 * test's setup) and only read afterwards; it holds pointers to const
 * vtables, so it carries no datapath state. */
static const struct netdev_class *netdev_classes[NETDEV_MAX_CLASSES];
static size_t netdev_n_classes;

int netdev_register(const struct netdev_class *class)
{
    if (netdev_class_find(class->type))
        return -EEXIST;
    if (netdev_n_classes >= NETDEV_MAX_CLASSES)
        return -ENOSPC;
    netdev_classes[netdev_n_classes++] = class;
    return 0;
}

void netdev_unregister_all(void)
{
    netdev_n_classes = 0;
}

const struct netdev_class *netdev_class_find(const char *type)
{
    for (size_t i = 0; i < netdev_n_classes; i++)
        if (!strcmp(netdev_classes[i]->type, type))
            return netdev_classes[i];
    return NULL;
}

bool netdev_type_known(const char *type)
{
    return netdev_class_find(type) != NULL;
}

void netdev_types(char *buf, size_t size)
{
    size_t used = 0;
    if (size)
        buf[0] = '\0';
    for (size_t i = 0; i < netdev_n_classes && used < size; i++) {
        int n = snprintf(buf + used, size - used, "%s%s", i ? ", " : "",
                         netdev_classes[i]->type);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

struct netdev *netdev_open(const char *name, const char *type,
                           const struct netdev_args *args, char *err,
                           size_t errlen)
{
    const struct netdev_class *class = netdev_class_find(type);
    if (!class) {
        char types[256];
        netdev_types(types, sizeof types);
        fs_errf(err, errlen, "unknown port type '%s' (known: %s)", type, types);
        return NULL;
    }
    if (strlen(name) >= NETDEV_NAME_MAX) {
        fs_errf(err, errlen, "port name '%s' longer than %d characters", name,
                NETDEV_NAME_MAX - 1);
        return NULL;
    }
    struct netdev *dev = calloc(1, sizeof *dev);
    void *priv = class->priv_size ? calloc(1, class->priv_size) : NULL;
    if (!dev || (class->priv_size && !priv)) {
        free(dev);
        free(priv);
        fs_errf(err, errlen, "out of memory");
        return NULL;
    }
    dev->class = class;
    dev->priv = priv;
    strcpy(dev->name, name);
    if (err && errlen)
        err[0] = '\0';
    int rc = class->open(dev, args, err, errlen);
    if (rc) {
        if (err && errlen && !err[0])
            fs_errf(err, errlen, "%s", strerror(rc < 0 ? -rc : rc));
        free(priv);
        free(dev);
        return NULL;
    }
    return dev;
}

void netdev_close(struct netdev *dev)
{
    if (!dev)
        return;
    dev->class->close(dev);
    free(dev->priv);
    free(dev);
}

const char *netdev_name(const struct netdev *dev)
{
    return dev->name;
}

const char *netdev_type(const struct netdev *dev)
{
    return dev->class->type;
}

unsigned netdev_n_rxq(const struct netdev *dev)
{
    return dev->class->n_rxq(dev);
}

unsigned netdev_n_txq(const struct netdev *dev)
{
    return dev->class->n_txq(dev);
}

int netdev_rxq_recv(struct netdev *dev, unsigned qid, struct pkt_batch *batch, uint64_t now)
{
    return dev->class->rxq_recv(dev, qid, batch, now);
}

int netdev_send(struct netdev *dev, unsigned qid, struct pkt **pkts, int n, uint16_t summary)
{
    return dev->class->send(dev, qid, pkts, n, summary);
}

bool netdev_tx_stamps(const struct netdev *dev)
{
    return dev->class->tx_stamps;
}

enum netdev_rx_state netdev_rxq_peek(struct netdev *dev, unsigned qid,
                                     uint64_t *next_ts)
{
    if (!dev->class->rxq_peek)
        return NETDEV_RX_EMPTY;
    return dev->class->rxq_peek(dev, qid, next_ts);
}

void netdev_get_caps(const struct netdev *dev, struct netdev_caps *caps)
{
    caps->flags = 0;
    if (dev->class->get_caps)
        dev->class->get_caps(dev, caps);
}

void netdev_get_stats(const struct netdev *dev, struct netdev_stats *stats)
{
    memset(stats, 0, sizeof *stats);
    if (dev->class->get_stats)
        dev->class->get_stats(dev, stats);
}

bool netdev_link_up(const struct netdev *dev)
{
    return dev->class->link_up ? dev->class->link_up(dev) : true;
}

const char *netdev_rx_error(const struct netdev *dev)
{
    return dev->class->rx_error ? dev->class->rx_error(dev) : NULL;
}

const char *netdev_opt_get(const struct netdev_args *args, const char *key)
{
    const char *v = NULL;
    for (size_t i = 0; i < args->n_opts; i++)
        if (!strcmp(args->opts[i].key, key))
            v = args->opts[i].value;
    return v;
}

int netdev_opt_uint(const struct netdev_args *args, const char *key,
                    unsigned long min, unsigned long max, unsigned long *out,
                    char *err, size_t errlen)
{
    const char *v = netdev_opt_get(args, key);
    if (!v)
        return 0;
    if (!fs_parse_uint(v, min, max, out)) {
        fs_errf(err, errlen, "option '%s': '%s' is not an integer in %lu..%lu",
                key, v, min, max);
        return -1;
    }
    return 0;
}

int netdev_opt_bool(const struct netdev_args *args, const char *key, bool *out,
                    char *err, size_t errlen)
{
    const char *v = netdev_opt_get(args, key);
    if (!v)
        return 0;
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    for (size_t i = 0; i < 4; i++) {
        if (!strcasecmp(v, yes[i])) {
            *out = true;
            return 0;
        }
        if (!strcasecmp(v, no[i])) {
            *out = false;
            return 0;
        }
    }
    fs_errf(err, errlen, "option '%s': '%s' is not a boolean (true/false)", key, v);
    return -1;
}

int netdev_opt_check(const struct netdev_args *args, const char *const *known,
                     char *err, size_t errlen)
{
    for (size_t i = 0; i < args->n_opts; i++) {
        const char *k = args->opts[i].key;
        bool ok = false;
        for (size_t j = 0; known[j]; j++)
            if (!strcmp(known[j], k))
                ok = true;
        if (!ok) {
            char list[256];
            size_t used = 0;
            list[0] = '\0';
            for (size_t j = 0; known[j] && used < sizeof list; j++) {
                int n = snprintf(list + used, sizeof list - used, "%s%s",
                                 j ? ", " : "", known[j]);
                if (n < 0)
                    break;
                used += (size_t)n;
            }
            fs_errf(err, errlen, "unknown option '%s' (known: %s)", k, list);
            return -1;
        }
    }
    return 0;
}

int netdev_path(const char *dir, const char *path, char *buf, size_t size)
{
    int n;
    if (path[0] == '/' || !dir || !dir[0])
        n = snprintf(buf, size, "%s", path);
    else
        n = snprintf(buf, size, "%s/%s", dir, path);
    return (n < 0 || (size_t)n >= size) ? -1 : 0;
}

static const struct {
    const char *name;
    uint32_t flags;
} netdev_cap_names[] = {
    {"tx-ip-csum", NETDEV_TX_IP_CSUM},
    {"tx-l4-csum", NETDEV_TX_L4_CSUM},
    {"tx-outer-ip-csum", NETDEV_TX_OUTER_IP_CSUM},
    {"tx-outer-udp-csum", NETDEV_TX_OUTER_UDP_CSUM},
    {"guest-csum", NETDEV_TX_GUEST_CSUM},
    {"rx-ip-csum", NETDEV_RX_IP_CSUM},
    {"rx-l4-csum", NETDEV_RX_L4_CSUM},
    {"rx-csum", NETDEV_RX_IP_CSUM | NETDEV_RX_L4_CSUM},
};

#define N_CAP_NAMES (sizeof netdev_cap_names / sizeof netdev_cap_names[0])

int netdev_caps_parse(const char *s, struct netdev_caps *caps, char *err,
                      size_t errlen)
{
    caps->flags = 0;
    char word[64];
    const char *p = s;
    while (*p) {
        while (*p == ',' || *p == ' ' || *p == '\t')
            p++;
        if (!*p)
            break;
        size_t n = strcspn(p, ", \t");
        if (n >= sizeof word) {
            fs_errf(err, errlen, "unknown capability '%.*s'", (int)n, p);
            return -1;
        }
        memcpy(word, p, n);
        word[n] = '\0';
        p += n;
        if (!strcmp(word, "none"))
            continue;
        size_t i;
        for (i = 0; i < N_CAP_NAMES; i++)
            if (!strcmp(word, netdev_cap_names[i].name))
                break;
        if (i == N_CAP_NAMES) {
            fs_errf(err, errlen,
                    "unknown capability '%s' (known: tx-ip-csum, tx-l4-csum, "
                    "tx-outer-ip-csum, tx-outer-udp-csum, guest-csum, rx-csum, "
                    "rx-ip-csum, rx-l4-csum, none)", word);
            return -1;
        }
        caps->flags |= netdev_cap_names[i].flags;
    }
    return 0;
}

void netdev_caps_format(const struct netdev_caps *caps, char *buf, size_t size)
{
    const uint32_t rx_both = NETDEV_RX_IP_CSUM | NETDEV_RX_L4_CSUM;
    bool both = (caps->flags & rx_both) == rx_both;
    size_t used = 0;
    if (size)
        buf[0] = '\0';
    for (size_t i = 0; i < N_CAP_NAMES && used < size; i++) {
        uint32_t f = netdev_cap_names[i].flags;
        /* The rx pair prints as "rx-csum", a single rx verdict by its name. */
        if ((caps->flags & f) != f || (both && f != rx_both && (f & rx_both)))
            continue;
        int n = snprintf(buf + used, size - used, "%s%s", used ? "," : "",
                         netdev_cap_names[i].name);
        if (n < 0)
            break;
        used += (size_t)n;
    }
    if (!used && size)
        snprintf(buf, size, "none");
}

void pkt_rx_classify(struct pkt_batch *batch, unsigned from, uint64_t *good, uint64_t *bad)
{
    for (unsigned i = from; i < batch->count; i++) {
        uint16_t vf = pkt_batch_flags_of(batch->pkts[i]);
        if (vf & PKT_BATCH_F_BAD)
            (*bad)++;
        else if (vf & PKT_BATCH_F_GOOD)
            (*good)++;
        batch->flags |= vf;
    }
}
