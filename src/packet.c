/* packet.c: heap packets, clones and headroom management. */
#include "packet.h"

/* Every metadata field at its fresh value; the buffer fields (before
 * csum[]) are never copied from it. */
const struct pkt pkt_fresh = {
    .ts = 0,
    .hash = 0,
    .in_port = 0,
    .flags = 0,
    .l3_ofs = PKT_OFS_NONE,
    .l4_ofs = PKT_OFS_NONE,
    .l4_len = 0,
    .payload_ofs = PKT_OFS_NONE,
    .l3 = PKT_L3_NONE,
    .l4_proto = 0,
    .n_vlan = 0,
    .csum = {CSUM_UNKNOWN, CSUM_UNKNOWN, CSUM_UNKNOWN, CSUM_UNKNOWN},
    .inner_l3_ofs = PKT_OFS_NONE,
    .inner_l4_ofs = PKT_OFS_NONE,
    .inner_l4_len = 0,
    .inner_l3 = PKT_L3_NONE,
    .inner_l4_proto = 0,
    .inner_flags = 0,
    .csum_start = 0,
    .csum_offset = 0,
    .out_vni = 0,
};
_Static_assert(CSUM_L_N == 4, "pkt_fresh lists every layer");
_Static_assert(offsetof(struct pkt, csum) > offsetof(struct pkt, len) &&
                   offsetof(struct pkt, csum) > offsetof(struct pkt, buf_size) &&
                   offsetof(struct pkt, csum) > offsetof(struct pkt, owner),
               "the buffer fields come before the metadata");

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void pkt_heap_release(struct pkt *p)
{
    free(p);
}

/* A heap packet is one allocation: the struct, then the buffer. Growing
 * the headroom moves the buffer to a second allocation. */
static void pkt_heap_release_split(struct pkt *p)
{
    free(p->buf);
    free(p);
}

static int pkt_heap_grow(struct pkt *p, uint32_t headroom);

static const struct pkt_ops pkt_heap_ops = {
    .release = pkt_heap_release,
    .grow_headroom = pkt_heap_grow,
};

static const struct pkt_ops pkt_heap_split_ops = {
    .release = pkt_heap_release_split,
    .grow_headroom = pkt_heap_grow,
};

static int pkt_heap_grow(struct pkt *p, uint32_t headroom)
{
    uint32_t tail = pkt_tailroom(p);
    uint64_t size = (uint64_t)headroom + p->len + tail;
    if (size > PKT_BUF_MAX)
        return -EOVERFLOW;
    uint8_t *nb = malloc(size);
    if (!nb)
        return -ENOMEM;
    memcpy(nb + headroom, p->data, p->len);
    if (p->ops == &pkt_heap_split_ops)
        free(p->buf);
    p->buf = nb;
    p->buf_size = (uint32_t)size;
    p->data = nb + headroom;
    p->ops = &pkt_heap_split_ops;
    return 0;
}

/* One allocation: the struct, then 'headroom' + 'size' bytes of buffer with
 * data at the headroom. Metadata is left to the caller. */
static struct pkt *pkt_heap_new(uint32_t headroom, uint32_t size)
{
    uint64_t total = (uint64_t)headroom + size;
    if (total > PKT_BUF_MAX)
        return NULL;
    struct pkt *p = malloc(sizeof *p + total);
    if (!p)
        return NULL;
    p->buf = (uint8_t *)(p + 1);
    p->buf_size = (uint32_t)total;
    p->data = p->buf + headroom;
    p->len = 0;
    p->ops = &pkt_heap_ops;
    p->owner = NULL;
    return p;
}

struct pkt *pkt_alloc(uint32_t size)
{
    struct pkt *p = pkt_heap_new(PKT_HEADROOM, size);
    if (p)
        pkt_reset_meta(p);
    return p;
}

struct pkt *pkt_from_data(const void *data, uint32_t len)
{
    struct pkt *p = pkt_alloc(len);
    if (p && len) {
        memcpy(p->data, data, len);
        p->len = len;
    }
    return p;
}

struct pkt *pkt_clone(const struct pkt *src)
{
    uint32_t head = pkt_headroom(src);
    if (head < PKT_HEADROOM)
        head = PKT_HEADROOM;
    struct pkt *p = pkt_heap_new(head, src->len);
    if (!p)
        return NULL;
    /* Every metadata field of src, but the buffer fields of the copy. */
    struct pkt fresh = *p;
    *p = *src;
    p->buf = fresh.buf;
    p->buf_size = fresh.buf_size;
    p->data = fresh.data;
    p->ops = fresh.ops;
    p->owner = NULL;
    memcpy(p->data, src->data, src->len);
    return p;
}

void pkt_free(struct pkt *p)
{
    if (p)
        p->ops->release(p);
}

void pkt_batch_free(struct pkt_batch *b)
{
    for (unsigned i = 0; i < b->count; i++)
        pkt_free(b->pkts[i]);
    pkt_batch_init(b);
}

uint8_t *pkt_push(struct pkt *p, uint32_t n, bool *grew)
{
    if (pkt_headroom(p) < n) {
        if (n > PKT_BUF_MAX || !p->ops->grow_headroom ||
            p->ops->grow_headroom(p, n + PKT_HEADROOM) != 0)
            return NULL;
        if (grew)
            *grew = true;
    }
    p->data -= n;
    p->len += n;
    return p->data;
}

uint8_t *pkt_pull(struct pkt *p, uint32_t n)
{
    p->data += n;
    p->len -= n;
    return p->data;
}
