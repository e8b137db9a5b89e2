/* p4sim native path: BMv2 simple_switch around the program, as p4sim/v1model/switch.py
 * runs it (the same order of blocks, decisions, clock readings and counters; the Python
 * driver is the reference and tests/p4sim/native compares the two), and the functions
 * the Python binding (p4sim/native/switch.py) calls.
 *
 * Header storage is reused as BMv2 reuses its PHVs and V1ModelSwitch (reuse_headers, the
 * default) models it: a packet that leaves (sent, dropped, replaced by its resubmitted or
 * recirculated copy) gives its headers back to a pool, all invalid but with their fields
 * (drv_give_back: _release); a new packet takes the last given back (drv_take: _new_packet),
 * so a header the parser does not extract reads the previous packet's fields; a copy
 * (multicast, clone) takes one and copies validity and the valid headers' fields into it
 * (drv_copy: _copy). The points where headers go back are exactly V1ModelSwitch's: a packet
 * lost to an error or to the work limit, or an egress work item the caller frees (a tail
 * drop in the switch process's queues), gives nothing back there either. */

#define P4N_EXPORT __attribute__((visibility("default")))
#define PORT_MASK 511
#define DROP_PORT 511
#define MAX_WORK_ITEMS 4096
enum { IT_NORMAL = 0, IT_INGRESS_CLONE = 1, IT_EGRESS_CLONE = 2, IT_RECIRC = 4, IT_REPLICATION = 5, IT_RESUBMIT = 6 };
enum { E_ASSERT = 1, E_PERR = 2, E_FAIL = 3 };

typedef struct p4item {
    p4phv pv;
    uint8_t *data; int64_t len;      /* ingress: the frame; egress: the payload */
    uint8_t *own;                    /* the allocation data points into (freed with the item), or NULL */
    int64_t port;                    /* ingress: arrival port; egress: egress port */
    int64_t length_reg, packet_id, copy_id, repasses, in_port;
    int trunc_set; int64_t trunc;
    int recirc_set; p4i recirc;
    int64_t priority;
    int qmeta_set; int64_t enq_ts, enq_qdepth, deq_qdepth;
    struct p4item *next;
} p4item;

typedef struct p4fifo { p4item *head, *tail; int64_t n; } p4fifo;

typedef struct p4nout {
    int64_t n, cap; int64_t *port, *off, *len, *src;
    uint8_t *buf; int64_t used, bufcap;
} p4nout;

typedef struct p4drv {
    p4fifo ing, eg;
    p4item *free_items;
    int64_t next_packet_id, copy_next;
    int64_t received, transmitted, dropped;
    int nerr, caperr; int32_t *errs;        /* (kind, arg) pairs */
    p4nout out;
    int64_t cur_src;
    p4item **work; int64_t nwork, capwork;  /* egress work handed to the caller (split mode) */
    p4ctx ctx, cctx;
    int reuse;                              /* V1ModelSwitch.reuse_headers */
    p4hdrs *pool; int64_t npool, cappool;   /* headers of packets that left, last on top */
    int64_t pre_buf[2 * 8192 + 2];
} p4drv;

/* _new_packet(): zero metadata, the headers on top of the pool (fresh ones when empty) */
static void drv_take(p4drv *d, p4phv *pv)
{
    prog_init_phv(pv);
    if (d->npool) pv->hdr = d->pool[--d->npool];
}
/* _release(): pv left the switch; its headers, invalid, go on top of the pool */
static void drv_give_back(p4drv *d, const p4phv *pv)
{
    if (!d->reuse) return;
    if (d->npool + 1 > d->cappool) {
        int64_t cap = d->cappool ? d->cappool * 2 : 16;
        p4hdrs *np = (p4hdrs *)realloc(d->pool, sizeof(p4hdrs) * (size_t)cap);
        if (!np) abort();
        d->pool = np; d->cappool = cap;
    }
    p4hdrs *h = &d->pool[d->npool++];
    *h = pv->hdr;
    prog_invalidate_headers(h);
}
/* _copy(): headers from the pool with src's valid headers copied in; the metadata src's
 * (zero with reset_metadata) */
static void drv_copy(p4drv *d, p4phv *dst, const p4phv *src, int reset_metadata)
{
    drv_take(d, dst);
    prog_copy_headers(&dst->hdr, &src->hdr);
    if (!reset_metadata) { dst->meta = src->meta; dst->std = src->std; }
}

static p4item *drv_alloc(p4drv *d)
{
    p4item *it = d->free_items;
    if (it) { d->free_items = it->next; }
    else { it = (p4item *)malloc(sizeof(p4item)); if (!it) abort(); }
    memset(it, 0, offsetof(p4item, pv));
    it->data = NULL; it->own = NULL; it->len = 0; it->next = NULL;
    it->trunc_set = 0; it->recirc_set = 0; it->qmeta_set = 0; it->priority = 0;
    return it;
}
static void drv_release(p4drv *d, p4item *it) { free(it->own); it->own = NULL; it->data = NULL; it->next = d->free_items; d->free_items = it; }
static void fifo_push(p4fifo *f, p4item *it) { it->next = NULL; if (f->tail) f->tail->next = it; else f->head = it; f->tail = it; f->n++; }
static p4item *fifo_pop(p4fifo *f) { p4item *it = f->head; if (it) { f->head = it->next; if (!f->head) f->tail = NULL; f->n--; it->next = NULL; } return it; }
static uint8_t *dupbytes(const uint8_t *src, int64_t n) { uint8_t *p = (uint8_t *)malloc((size_t)(n > 0 ? n : 1)); if (!p) abort(); if (n > 0) memcpy(p, src, (size_t)n); return p; }

static void drv_error(p4drv *d, int kind, int arg)
{
    if (d->nerr + 1 > d->caperr) {
        int cap = d->caperr ? d->caperr * 2 : 64;
        int32_t *ne = (int32_t *)realloc(d->errs, sizeof(int32_t) * 2 * (size_t)cap);
        if (!ne) abort();
        d->errs = ne; d->caperr = cap;
    }
    d->errs[2 * d->nerr] = kind; d->errs[2 * d->nerr + 1] = arg; d->nerr++;
    d->dropped++;
}
/* a block's status: 0 goes on, anything else is the error _guarded() catches */
static int drv_failed(p4drv *d, p4ctx *ctx, int rc)
{
    if (rc == P4N_OK) return 0;
    if (rc == P4N_ASSERT) drv_error(d, E_ASSERT, ctx->err_arg);
    else if (rc == P4N_PERR) drv_error(d, E_PERR, ctx->perr);
    else drv_error(d, E_FAIL, ctx->err_arg);
    return 1;
}

static void out_add(p4drv *d, int64_t port, const uint8_t *a, int64_t na, const uint8_t *b, int64_t nb)
{
    p4nout *o = &d->out;
    if (o->n + 1 > o->cap) {
        int64_t cap = o->cap ? o->cap * 2 : 64;
        o->port = (int64_t *)realloc(o->port, sizeof(int64_t) * (size_t)cap);
        o->off = (int64_t *)realloc(o->off, sizeof(int64_t) * (size_t)cap);
        o->len = (int64_t *)realloc(o->len, sizeof(int64_t) * (size_t)cap);
        o->src = (int64_t *)realloc(o->src, sizeof(int64_t) * (size_t)cap);
        if (!o->port || !o->off || !o->len || !o->src) abort();
        o->cap = cap;
    }
    if (o->used + na + nb > o->bufcap) {
        int64_t cap = o->bufcap ? o->bufcap : 65536;
        while (cap < o->used + na + nb) cap *= 2;
        o->buf = (uint8_t *)realloc(o->buf, (size_t)cap);
        if (!o->buf) abort();
        o->bufcap = cap;
    }
    o->port[o->n] = port; o->off[o->n] = o->used; o->len[o->n] = na + nb; o->src[o->n] = d->cur_src;
    if (na) memcpy(o->buf + o->used, a, (size_t)na);
    if (nb) memcpy(o->buf + o->used + na, b, (size_t)nb);
    o->used += na + nb;
    o->n++;
}

/* _enqueue(): pv goes to the egress queue (with copy: a copy of it, _copy(pv)); a priority
 * out of range drops it and gives its headers back */
static void drv_enqueue_from(p4sw *sw, p4drv *d, int64_t port, const p4phv *pv, int copy, const uint8_t *payload, int64_t plen,
                             int64_t length_reg, int64_t pid, int64_t cid, int64_t repasses, int64_t in_port,
                             int trunc_set, int64_t trunc, int recirc_set, p4i recirc, p4item *steal_from);
static void drv_enqueue(p4sw *sw, p4drv *d, int64_t port, const p4phv *pv, int copy, const uint8_t *payload, int64_t plen,
                        int64_t length_reg, int64_t pid, int64_t cid, int64_t repasses, int64_t in_port,
                        int trunc_set, int64_t trunc, int recirc_set, p4i recirc)
{
    drv_enqueue_from(sw, d, port, pv, copy, payload, plen, length_reg, pid, cid, repasses, in_port, trunc_set, trunc,
                     recirc_set, recirc, NULL);
}
/* drv_enqueue; with steal_from (the ingress item that holds payload, about to be released)
 * the egress item takes its buffer instead of a copy of the payload */
static void drv_enqueue_from(p4sw *sw, p4drv *d, int64_t port, const p4phv *pv, int copy, const uint8_t *payload, int64_t plen,
                             int64_t length_reg, int64_t pid, int64_t cid, int64_t repasses, int64_t in_port,
                             int trunc_set, int64_t trunc, int recirc_set, p4i recirc, p4item *steal_from)
{
    p4item *it = drv_alloc(d);
    if (copy) drv_copy(d, &it->pv, pv, 0);
    else it->pv = *pv;
    int64_t priority = (int64_t)STD_GET_priority(&it->pv);
    if (priority >= sw->priority_queues) { d->dropped++; drv_give_back(d, &it->pv); drv_release(d, it); return; }
    STD_SET_enq_timestamp(&it->pv, (p4i)p4n_clock(sw));
    STD_SET_enq_qdepth(&it->pv, 0);
    if (steal_from && steal_from->own) { it->own = steal_from->own; steal_from->own = NULL; it->data = (uint8_t *)payload; }
    else { it->data = it->own = dupbytes(payload, plen); }
    it->len = plen;
    it->port = port & PORT_MASK; it->length_reg = length_reg; it->packet_id = pid; it->copy_id = cid;
    it->repasses = repasses; it->in_port = in_port;
    it->trunc_set = trunc_set; it->trunc = trunc; it->recirc_set = recirc_set; it->recirc = recirc;
    it->priority = priority;
    fifo_push(&d->eg, it);
}

/* _clone(): the copies of a clone into a session (I2E or E2E) */
static int drv_clone(p4sw *sw, p4drv *d, p4i session, int fl_set, p4i fl, const p4phv *src, p4phv *clone_pv,
                     const uint8_t *payload, int64_t plen, int64_t length_reg, int64_t pid, int64_t repasses,
                     int64_t in_port, int itype)
{
    int n = sw->pre_cb ? sw->pre_cb(1, (int64_t)session, d->pre_buf, 8192) : -1;
    if (n < -1) { drv_error(d, E_FAIL, -2); return 1; }
    if (n < 0) return 0;                       /* session not configured: no clone */
    if (fl_set) prog_preserve(fl, src, clone_pv);   /* 0 is a list like any other */
    STD_SET_instance_type(clone_pv, itype);
    int64_t trunc = d->pre_buf[0];
    for (int i = 0; i < n; i++) {
        int64_t port = d->pre_buf[1 + 2 * i], rid = d->pre_buf[2 + 2 * i];
        if (rid >= 0) STD_SET_egress_rid(clone_pv, rid);
        d->copy_next++;
        drv_enqueue(sw, d, port, clone_pv, 1, payload, plen, length_reg, pid, d->copy_next, repasses, in_port,
                    trunc > 0, trunc, 0, 0);
    }
    return 0;
}

static void drv_run_ingress(p4sw *sw, p4drv *d, p4item *item)
{
    p4ctx *ctx = &d->ctx;
    p4phv *pv = &item->pv;
    p4n_ctx_init(ctx, sw, item->data, item->len, p4n_clock(sw));
    if (drv_failed(d, ctx, prog_parser(ctx, pv))) return;
    if (drv_failed(d, ctx, prog_verify_checksum(ctx, pv))) return;
    if (drv_failed(d, ctx, prog_ingress(ctx, pv))) return;
    int64_t egress_spec = (int64_t)STD_GET_egress_spec(pv) & PORT_MASK;
    p4i mgid = STD_GET_mcast_grp(pv);
    int64_t length_reg = item->len;
    if (ctx->clone_set) {
        p4phv cpv, clone_pv;
        drv_take(d, &cpv);
        STD_SET_ingress_port(&cpv, item->port);
        p4ctx *c2 = &d->cctx;
        p4n_ctx_init(c2, sw, item->data, item->len, (int64_t)ctx->now_us);
        if (drv_failed(d, c2, prog_parser(c2, &cpv))) return;
        if (drv_failed(d, c2, prog_verify_checksum(c2, &cpv))) return;
        prog_init_phv(&clone_pv);            /* metadata reset, the headers just parsed */
        clone_pv.hdr = cpv.hdr;
        int64_t off = c2->offset_bits >> 3; if (off > item->len) off = item->len;
        if (drv_clone(sw, d, ctx->clone_session, ctx->clone_fl_set, ctx->clone_fl, pv, &clone_pv,
                      item->data + off, item->len - off, length_reg, item->packet_id, item->repasses,
                      item->port, IT_INGRESS_CLONE)) return;
        drv_give_back(d, &clone_pv);
    }
    if (ctx->digest_set) {
        uint64_t vals[2 * P4N_MAX_DIGEST_VALUES];
        for (int i = 0; i < ctx->digest_n; i++) { vals[2 * i] = (uint64_t)ctx->digest_vals[i]; vals[2 * i + 1] = (uint64_t)((p4u)ctx->digest_vals[i] >> 64); }
        int64_t now = p4n_clock(sw);
        if (!sw->digest_cb || sw->digest_cb(ctx->digest_name, ctx->digest_n, vals, now) < 0) { drv_error(d, E_FAIL, -3); return; }
    }
    if (ctx->resubmit_set) {
        if (item->repasses >= sw->max_repasses) { d->dropped++; drv_give_back(d, pv); return; }
        p4item *n = drv_alloc(d);
        drv_take(d, &n->pv);
        prog_preserve(ctx->resubmit, pv, &n->pv);
        drv_give_back(d, pv);
        STD_SET_instance_type(&n->pv, IT_RESUBMIT);
        STD_SET_packet_length(&n->pv, length_reg);
        n->data = n->own = dupbytes(item->data, item->len); n->len = item->len; n->port = item->port;
        n->packet_id = item->packet_id; n->copy_id = ++d->copy_next; n->repasses = item->repasses + 1;
        fifo_push(&d->ing, n);
        return;
    }
    int64_t off = ctx->offset_bits >> 3; if (off > item->len) off = item->len;
    const uint8_t *payload = item->data + off; int64_t plen = item->len - off;
    length_reg = item->len + (int64_t)ctx->length_delta;
    if (mgid != 0) {
        STD_SET_instance_type(pv, IT_REPLICATION);
        int n = sw->pre_cb ? sw->pre_cb(0, (int64_t)mgid, d->pre_buf, 8192) : 0;
        if (n < 0) { drv_error(d, E_FAIL, -2); return; }
        for (int i = 0; i < n; i++) {
            STD_SET_egress_rid(pv, d->pre_buf[2 * i + 1]);
            d->copy_next++;
            drv_enqueue(sw, d, d->pre_buf[2 * i], pv, 1, payload, plen, length_reg, item->packet_id, d->copy_next,
                        item->repasses, item->port, 0, 0, 0, 0);
        }
        drv_give_back(d, pv);
        return;
    }
    if (egress_spec == DROP_PORT) { d->dropped++; drv_give_back(d, pv); return; }
    STD_SET_instance_type(pv, IT_NORMAL);
    drv_enqueue_from(sw, d, egress_spec, pv, 0, payload, plen, length_reg, item->packet_id, item->copy_id, item->repasses,
                     item->port, ctx->trunc_set, (int64_t)ctx->trunc, ctx->recirc_set, ctx->recirc, item);
}

static void drv_run_egress(p4sw *sw, p4drv *d, p4item *item)
{
    p4ctx *ctx = &d->ctx;
    p4phv *pv = &item->pv;
    int64_t now = p4n_clock(sw);
    STD_SET_egress_global_timestamp(pv, now);
    int64_t deq_qdepth = 0;
    if (item->qmeta_set) {
        STD_SET_enq_timestamp(pv, item->enq_ts);
        STD_SET_enq_qdepth(pv, item->enq_qdepth);
        deq_qdepth = item->deq_qdepth;
    }
    p4i td = (p4i)now - STD_GET_enq_timestamp(pv);
    STD_SET_deq_timedelta(pv, td > 0 ? td : 0);
    STD_SET_deq_qdepth(pv, deq_qdepth);
    STD_SET_egress_port(pv, item->port);
    STD_SET_egress_spec(pv, 0);
    STD_SET_packet_length(pv, item->length_reg);
    p4n_ctx_init(ctx, sw, item->data, item->len, now);
    ctx->recirc_set = item->recirc_set; ctx->recirc = item->recirc;
    if (drv_failed(d, ctx, prog_egress(ctx, pv))) return;
    if (ctx->clone_set) {
        p4phv clone_pv;
        drv_copy(d, &clone_pv, pv, 1);       /* headers as egress left them, metadata reset */
        if (drv_clone(sw, d, ctx->clone_session, ctx->clone_fl_set, ctx->clone_fl, pv, &clone_pv, item->data,
                      item->len, item->length_reg + (int64_t)ctx->length_delta, item->packet_id, item->repasses,
                      item->in_port, IT_EGRESS_CLONE)) return;
        drv_give_back(d, &clone_pv);
    }
    if (((int64_t)STD_GET_egress_spec(pv) & PORT_MASK) == DROP_PORT) { d->dropped++; drv_give_back(d, pv); return; }
    if (drv_failed(d, ctx, prog_compute_checksum(ctx, pv))) return;
    if (drv_failed(d, ctx, prog_deparser(ctx, pv))) return;
    int64_t hlen = p4b_nbytes(&ctx->emitted);
    if (ctx->recirc_set) {
        if (item->repasses >= sw->max_repasses) { d->dropped++; drv_give_back(d, pv); return; }
        p4item *n = drv_alloc(d);
        drv_take(d, &n->pv);
        prog_preserve(ctx->recirc, pv, &n->pv);
        drv_give_back(d, pv);
        STD_SET_instance_type(&n->pv, IT_RECIRC);
        STD_SET_packet_length(&n->pv, hlen + item->len);
        n->data = n->own = (uint8_t *)malloc((size_t)(hlen + item->len + 1));
        if (!n->data) abort();
        if (hlen) memcpy(n->data, ctx->emitted.buf, (size_t)hlen);
        if (item->len) memcpy(n->data + hlen, item->data, (size_t)item->len);
        n->len = hlen + item->len; n->port = item->in_port;
        n->packet_id = item->packet_id; n->copy_id = ++d->copy_next; n->repasses = item->repasses + 1;
        fifo_push(&d->ing, n);
        return;
    }
    int64_t total = hlen + item->len;
    int64_t limit = total;
    if (item->trunc_set && item->trunc < limit) limit = item->trunc;
    if (ctx->trunc_set && (int64_t)ctx->trunc < limit) limit = (int64_t)ctx->trunc;
    if (limit < 0) limit = 0;
    d->transmitted++;
    int64_t na = hlen < limit ? hlen : limit;
    out_add(d, item->port, ctx->emitted.buf, na, item->data, limit - na);
    drv_give_back(d, pv);
}

/* owned: the item takes data (a malloc'd buffer) instead of a copy */
static void drv_start_owned(p4sw *sw, p4drv *d, int64_t port, uint8_t *data, int64_t len, int owned)
{
    int64_t pid = d->next_packet_id++;
    d->copy_next = 0;
    d->received++;
    p4item *it = drv_alloc(d);
    drv_take(d, &it->pv);
    STD_SET_ingress_port(&it->pv, port & PORT_MASK);
    STD_SET_packet_length(&it->pv, len);
    STD_SET_instance_type(&it->pv, IT_NORMAL);
    STD_SET_ingress_global_timestamp(&it->pv, p4n_clock(sw));
    it->data = it->own = owned ? data : dupbytes(data, len);
    it->len = len; it->port = port & PORT_MASK;
    it->packet_id = pid; it->copy_id = 0; it->repasses = 0;
    fifo_push(&d->ing, it);
}

static void drv_start(p4sw *sw, p4drv *d, int64_t port, const uint8_t *data, int64_t len)
{
    drv_start_owned(sw, d, port, (uint8_t *)data, len, 0);
}

static void drv_drain(p4sw *sw, p4drv *d, int with_egress)
{
    int64_t work = 0;
    while (d->ing.n || (with_egress && d->eg.n)) {
        if (++work > MAX_WORK_ITEMS) {
            d->dropped += d->ing.n + d->eg.n;
            p4item *it;
            while ((it = fifo_pop(&d->ing))) drv_release(d, it);
            while ((it = fifo_pop(&d->eg))) drv_release(d, it);
            break;
        }
        if (d->ing.n) { p4item *it = fifo_pop(&d->ing); drv_run_ingress(sw, d, it); drv_release(d, it); }
        else { p4item *it = fifo_pop(&d->eg); drv_run_egress(sw, d, it); drv_release(d, it); }
    }
}

static void drv_take_work(p4drv *d)
{
    d->nwork = 0;
    p4item *it;
    while ((it = fifo_pop(&d->eg))) {
        if (d->nwork + 1 > d->capwork) {
            int64_t cap = d->capwork ? d->capwork * 2 : 64;
            d->work = (p4item **)realloc(d->work, sizeof(p4item *) * (size_t)cap);
            if (!d->work) abort();
            d->capwork = cap;
        }
        d->work[d->nwork++] = it;
    }
}

/* ------------------------------------------------------------------ exported API */
P4N_EXPORT int p4n_phv_size(void) { return (int)sizeof(p4phv); }

P4N_EXPORT p4sw *p4n_new(int ntables, int nprofs, int nregs, int nctrs, int nvss, int nhashes)
{
    p4hash_init_static();
    p4sw *sw = (p4sw *)calloc(1, sizeof(p4sw));
    if (!sw) return NULL;
    sw->ntables = ntables; sw->tables = (p4tbl *)calloc((size_t)(ntables + 1), sizeof(p4tbl));
    sw->nprofs = nprofs; sw->profs = (p4prof *)calloc((size_t)(nprofs + 1), sizeof(p4prof));
    sw->nregs = nregs; sw->regs = (p4reg *)calloc((size_t)(nregs + 1), sizeof(p4reg));
    sw->nctrs = nctrs; sw->ctrs = (p4ctr *)calloc((size_t)(nctrs + 1), sizeof(p4ctr));
    sw->nvss = nvss; sw->vss = (p4vs *)calloc((size_t)(nvss + 1), sizeof(p4vs));
    sw->nhashes = nhashes; sw->hashes = (p4hash *)calloc((size_t)(nhashes + 1), sizeof(p4hash));
    sw->drv = calloc(1, sizeof(p4drv));
    if (!sw->drv) { free(sw); return NULL; }
    sw->priority_queues = 1; sw->max_repasses = 64; sw->stamp = 1;
    ((p4drv *)sw->drv)->reuse = 1;
    for (int i = 0; i < ntables; i++) sw->tables[i].last_color = -1;
    return sw;
}

P4N_EXPORT void p4n_set_options(p4sw *sw, int64_t clock_start_ns, int64_t priority_queues, int64_t max_repasses)
{
    sw->clock_start_ns = clock_start_ns; sw->priority_queues = priority_queues; sw->max_repasses = max_repasses;
}

/* V1ModelSwitch's reuse_headers (1, the default: BMv2's PHV reuse; 0: fresh headers);
 * turning it off empties the pool */
P4N_EXPORT void p4n_set_reuse(p4sw *sw, int reuse)
{
    p4drv *d = (p4drv *)sw->drv;
    d->reuse = reuse != 0;
    if (!d->reuse) d->npool = 0;
}

P4N_EXPORT void p4n_set_callbacks(p4sw *sw, p4n_clock_fn clock_cb, p4n_meter_fn meter_cb, p4n_hit_fn hit_cb,
                                  p4n_digest_fn digest_cb, p4n_pre_fn pre_cb)
{
    sw->clock_cb = clock_cb; sw->meter_cb = meter_cb; sw->hit_cb = hit_cb; sw->digest_cb = digest_cb; sw->pre_cb = pre_cb;
}

P4N_EXPORT void p4n_set_rng(p4sw *sw, const uint32_t *state, int index)
{
    memcpy(sw->rng.mt, state, sizeof sw->rng.mt); sw->rng.mti = index;
}
P4N_EXPORT int p4n_get_rng(p4sw *sw, uint32_t *state) { memcpy(state, sw->rng.mt, sizeof sw->rng.mt); return sw->rng.mti; }

P4N_EXPORT void p4n_set_register(p4sw *sw, int i, int64_t size, int width, uint64_t *cells)
{
    p4reg *r = &sw->regs[i];
    r->size = size; r->width = width; r->mask = width >= 64 ? ~(uint64_t)0 : ((((uint64_t)1) << width) - 1); r->cells = cells;
}
P4N_EXPORT void p4n_set_counter(p4sw *sw, int i, int64_t size, uint64_t *packets, uint64_t *bytes)
{
    p4ctr *c = &sw->ctrs[i];
    c->size = size; c->packets = packets; c->bytes = bytes;
}
static void hash_set(p4hash *h, int kind, int width, uint64_t poly, uint64_t init, uint64_t xorout, int refin, int refout)
{
    if (kind == P4H_CUSTOM) p4hash_config(h, width, poly, init, xorout, refin, refout);
    else h->kind = kind;
}
P4N_EXPORT void p4n_set_hash(p4sw *sw, int i, int kind, int width, uint64_t poly, uint64_t init, uint64_t xorout, int refin, int refout)
{
    hash_set(&sw->hashes[i], kind, width, poly, init, xorout, refin, refout);
}
P4N_EXPORT void p4n_prof_hash(p4sw *sw, int i, int kind, int width, uint64_t poly, uint64_t init, uint64_t xorout, int refin, int refout)
{
    hash_set(&sw->profs[i].hash, kind, width, poly, init, xorout, refin, refout);
}

static p4i lohi(const uint64_t *v, int i) { return (p4i)(((p4u)v[2 * i + 1] << 64) | (p4u)v[2 * i]); }

P4N_EXPORT void p4n_table_config(p4sw *sw, int ti, int mode, int nkeys, int nmkeys, const int *match_idx, int nsel,
                                 const int *sel_idx, const int *sel_w, int lpm_pos, int lpm_width, int prof, int hit_cb)
{
    p4tbl *t = &sw->tables[ti];
    t->mode = mode; t->nkeys = nkeys; t->nmkeys = nmkeys;
    free(t->match_idx); free(t->sel_idx); free(t->sel_w);
    t->match_idx = (int *)calloc((size_t)nmkeys + 1, sizeof(int)); memcpy(t->match_idx, match_idx, sizeof(int) * (size_t)nmkeys);
    t->nsel = nsel;
    t->sel_idx = (int *)calloc((size_t)nsel + 1, sizeof(int)); memcpy(t->sel_idx, sel_idx, sizeof(int) * (size_t)nsel);
    t->sel_w = (int *)calloc((size_t)nsel + 1, sizeof(int)); memcpy(t->sel_w, sel_w, sizeof(int) * (size_t)nsel);
    t->lpm_pos = lpm_pos; t->lpm_width = lpm_width;
    t->prof = prof >= 0 ? &sw->profs[prof] : NULL;
    t->hit_cb = hit_cb;
}

/* A table's entries change in place, slot by slot (p4sim/native/switch.py's _push_table):
 * p4n_table_clear empties it, p4n_table_del frees slots, p4n_table_put fills or modifies
 * slots from one flat array, p4n_table_commit brings the lookup index up to date. The exact
 * index follows every put and delete; lpm and general indexes are built again on commit
 * after a change (in C, from the entries already there). */
P4N_EXPORT void p4n_table_clear(p4sw *sw, int ti)
{
    p4tbl_free_entries(&sw->tables[ti]);
}

static void tbl_reserve(p4tbl *t, int n)
{
    if (n <= t->cap) return;
    int cap = t->cap ? t->cap : 16;
    while (cap < n) cap *= 2;
    p4ent *ents = (p4ent *)realloc(t->ents, ((size_t)cap + 1) * sizeof(p4ent));
    int64_t *lh = (int64_t *)realloc(t->last_hit_ns, ((size_t)cap + 1) * sizeof(int64_t));
    int *hs = (int *)realloc(t->hit_stamp, ((size_t)cap + 1) * sizeof(int));
    if (!ents || !lh || !hs) abort();
    memset(ents + t->cap, 0, ((size_t)cap + 1 - (size_t)t->cap) * sizeof(p4ent));
    for (int i = t->cap; i <= cap; i++) ents[i].kind = P4E_FREE;
    memset(lh + t->cap, 0, ((size_t)cap + 1 - (size_t)t->cap) * sizeof(int64_t));
    memset(hs + t->cap, 0, ((size_t)cap + 1 - (size_t)t->cap) * sizeof(int));
    t->ents = ents; t->last_hit_ns = lh; t->hit_stamp = hs; t->cap = cap;
}

static void ent_free(p4ent *e)
{
    free(e->args); free(e->mask);          /* mask: the key's one block (p4n_table_put) */
    memset(e, 0, sizeof *e);
    e->kind = P4E_FREE;
}

/* free the n slots given (each holding an entry) */
P4N_EXPORT void p4n_table_del(p4sw *sw, int ti, int n, const int64_t *slots)
{
    p4tbl *t = &sw->tables[ti];
    for (int k = 0; k < n; k++) {
        int slot = (int)slots[k];
        if (slot < 0 || slot >= t->nent || t->ents[slot].kind == P4E_FREE) continue;
        p4ent *e = &t->ents[slot];
        if (t->mode == P4T_EXACT) p4map_del(&t->exact, e->val);
        else t->ix_dirty = 1;
        ent_free(e);
    }
}

/* n records, one after another in w (each number one uint64_t, a 128-bit value two, low
 * word first), each beginning  op slot kind act nargs ref args[nargs]:
 *   op 0, a new entry in a free slot, then: prio handle nranges mask[nmkeys] val[nmkeys]
 *       and nranges x (pos lo hi);
 *   op 1, a new action for the entry in the slot: nothing more;
 * or, a new entry of an exact table whose action and masks are those of the entry in slot src
 * (one put before it in the same call):  op=2 slot src prio handle val[nmkeys] */
P4N_EXPORT void p4n_table_put(p4sw *sw, int ti, int n, const uint64_t *w)
{
    p4tbl *t = &sw->tables[ti];
    int nm = t->nmkeys;
    if (t->mode == P4T_EXACT && !t->exact.cap) p4map_init(&t->exact, nm, n);
    for (int k = 0; k < n; k++) {
        int op = (int)w[0], slot = (int)w[1];
        tbl_reserve(t, slot + 1);
        p4ent *e = &t->ents[slot];
        if (op != 1 && e->kind != P4E_FREE) {          /* never happens: the slot was taken */
            if (t->mode == P4T_EXACT) p4map_del(&t->exact, e->val);
            ent_free(e);
        }
        if (op == 1) free(e->args);
        const p4ent *src = NULL;
        if (op == 2) {
            src = &t->ents[(int)w[2]];
            e->slot = slot; e->kind = src->kind; e->act = src->act; e->nargs = src->nargs; e->ref = src->ref;
            e->args = (p4i *)calloc((size_t)e->nargs + 1, sizeof(p4i));
            memcpy(e->args, src->args, sizeof(p4i) * (size_t)e->nargs);
            e->prio = (int64_t)w[3]; e->handle = (int64_t)w[4]; e->nranges = 0;
            w += 5;
        } else {
            e->slot = slot; e->kind = (int)w[2]; e->act = (int)w[3]; e->nargs = (int)w[4]; e->ref = (int64_t)w[5];
            w += 6;
            e->args = (p4i *)calloc((size_t)e->nargs + 1, sizeof(p4i));
            for (int i = 0; i < e->nargs; i++) e->args[i] = lohi(w, i);
            w += 2 * e->nargs;
            if (op == 1) continue;
            e->prio = (int64_t)w[0]; e->handle = (int64_t)w[1]; e->nranges = (int)w[2];
            w += 3;
        }
        /* one block for the key: mask[nm+1] val[nm+1] rlo[nr+1] rhi[nr+1] (16-byte words), then
         * rpos[nr+1]; e->mask is the block (ent_free and p4tbl_free_entries free it alone) */
        int nr = e->nranges;
        size_t wide = 2 * ((size_t)nm + 1) + 2 * ((size_t)nr + 1);
        p4u *blk = (p4u *)calloc(1, wide * sizeof(p4u) + ((size_t)nr + 1) * sizeof(int));
        if (!blk) abort();
        e->mask = blk; e->val = blk + nm + 1; e->rlo = e->val + nm + 1; e->rhi = e->rlo + nr + 1;
        e->rpos = (int *)(blk + wide);
        if (src) {
            for (int i = 0; i < nm; i++) { e->mask[i] = src->mask[i]; e->val[i] = (p4u)lohi(w, i); }
            w += 2 * nm;
        } else {
            for (int i = 0; i < nm; i++) { e->mask[i] = (p4u)lohi(w, i); e->val[i] = (p4u)lohi(w + 2 * nm, i); }
            w += 4 * nm;
        }
        for (int i = 0; i < nr; i++) { e->rpos[i] = (int)w[0]; e->rlo[i] = (p4u)lohi(w + 1, 0); e->rhi[i] = (p4u)lohi(w + 3, 0); w += 5; }
        t->last_hit_ns[slot] = 0; t->hit_stamp[slot] = 0;
        if (slot >= t->nent) t->nent = slot + 1;
        if (t->mode == P4T_EXACT) p4map_put(&t->exact, e->val, slot);
        else t->ix_dirty = 1;
    }
}

/* What C holds for table ti, for tests to compare with the Python table (p4sim/native/switch.py's
 * NativeSwitch.table_state): def_act def_nargs def_args[def_nargs], nlive, then per live slot
 * slot kind act nargs ref args[nargs] prio handle nranges mask[nmkeys] val[nmkeys] ranges[nranges]
 * (pos lo hi) indexed, where indexed is 1 when the exact index finds this slot by its values (an
 * exact table; always 1 otherwise). A 128-bit value is two words, low first. Returns the words
 * written, or minus the words needed when cap is too small (nothing is then written past cap). */
static int64_t dump_put(uint64_t *out, int64_t at, int64_t cap, uint64_t v) { if (at < cap) out[at] = v; return at + 1; }
static int64_t dump_wide(uint64_t *out, int64_t at, int64_t cap, p4u v)
{
    at = dump_put(out, at, cap, (uint64_t)v);
    return dump_put(out, at, cap, (uint64_t)(v >> 64));
}
P4N_EXPORT int64_t p4n_table_dump(p4sw *sw, int ti, uint64_t *out, int64_t cap)
{
    p4tbl *t = &sw->tables[ti];
    int64_t at = 0, nlive = 0;
    at = dump_put(out, at, cap, (uint64_t)(int64_t)t->def_act);
    int dn = t->def_nargs < P4N_MAXARGS ? t->def_nargs : P4N_MAXARGS;
    at = dump_put(out, at, cap, (uint64_t)(int64_t)dn);
    for (int i = 0; i < dn; i++) at = dump_wide(out, at, cap, (p4u)t->def_args[i]);
    for (int s = 0; s < t->nent; s++) if (t->ents[s].kind != P4E_FREE) nlive++;
    at = dump_put(out, at, cap, (uint64_t)nlive);
    for (int s = 0; s < t->nent; s++) {
        p4ent *e = &t->ents[s];
        if (e->kind == P4E_FREE) continue;
        at = dump_put(out, at, cap, (uint64_t)s);
        at = dump_put(out, at, cap, (uint64_t)(int64_t)e->kind);
        at = dump_put(out, at, cap, (uint64_t)(int64_t)e->act);
        at = dump_put(out, at, cap, (uint64_t)(int64_t)e->nargs);
        at = dump_put(out, at, cap, (uint64_t)e->ref);
        for (int i = 0; i < e->nargs; i++) at = dump_wide(out, at, cap, (p4u)e->args[i]);
        at = dump_put(out, at, cap, (uint64_t)e->prio);
        at = dump_put(out, at, cap, (uint64_t)e->handle);
        at = dump_put(out, at, cap, (uint64_t)(int64_t)e->nranges);
        for (int i = 0; i < t->nmkeys; i++) at = dump_wide(out, at, cap, e->mask[i]);
        for (int i = 0; i < t->nmkeys; i++) at = dump_wide(out, at, cap, e->val[i]);
        for (int i = 0; i < e->nranges; i++) {
            at = dump_put(out, at, cap, (uint64_t)(int64_t)e->rpos[i]);
            at = dump_wide(out, at, cap, e->rlo[i]);
            at = dump_wide(out, at, cap, e->rhi[i]);
        }
        int indexed = 1;
        if (t->mode == P4T_EXACT) indexed = t->exact.cap && p4map_get(&t->exact, e->val) == s;
        at = dump_put(out, at, cap, (uint64_t)(int64_t)indexed);
    }
    return at <= cap ? at : -at;
}

P4N_EXPORT void p4n_table_default(p4sw *sw, int ti, int act, int nargs, const uint64_t *args)
{
    p4tbl *t = &sw->tables[ti];
    t->def_act = act; t->def_nargs = nargs;
    for (int i = 0; i < nargs && i < P4N_MAXARGS; i++) t->def_args[i] = lohi(args, i);
}

static int cmp_order_tbl_ents(const p4ent *a, const p4ent *b)
{
    if (a->prio != b->prio) return a->prio > b->prio ? -1 : 1;
    return a->handle < b->handle ? -1 : (a->handle > b->handle);
}
static p4tbl *sort_tbl;
static int cmp_order(const void *x, const void *y) { return cmp_order_tbl_ents(&sort_tbl->ents[*(const int *)x], &sort_tbl->ents[*(const int *)y]); }

/* the lookup index of an lpm or general table built again after a change (p4sim/runtime/tables.py's
 * modes; free slots left out); an exact table's is always up to date */
P4N_EXPORT void p4n_table_commit(p4sw *sw, int ti)
{
    p4tbl *t = &sw->tables[ti];
    if (!t->ix_dirty || t->mode == P4T_EXACT || t->mode == P4T_KEYLESS) return;
    t->ix_dirty = 0;
    for (int i = 0; i < t->nlevels; i++) p4map_free(&t->levels[i].map);
    free(t->levels); t->levels = NULL; t->nlevels = 0;
    free(t->order); t->order = NULL; t->norder = 0;
    if (t->mode == P4T_LPM) {
        int w = t->lpm_width;
        int counts[130] = {0};
        p4u full = w >= 128 ? ~(p4u)0 : ((((p4u)1) << w) - 1);
        int *plen = (int *)calloc((size_t)t->nent + 1, sizeof(int));
        for (int i = 0; i < t->nent; i++) {
            plen[i] = -1;
            if (t->ents[i].kind == P4E_FREE) continue;
            p4u m = t->ents[i].mask[t->lpm_pos];
            int pl = 0; for (p4u x = m & full; x; x <<= 1) { if (x & (((p4u)1) << (w - 1))) pl++; else break; x &= full; }
            plen[i] = pl; counts[pl]++;
        }
        int nl = 0; for (int p = 0; p <= w && p < 130; p++) if (counts[p]) nl++;
        t->levels = (p4lpmlevel *)calloc((size_t)nl + 1, sizeof(p4lpmlevel)); t->nlevels = nl;
        int li = 0;
        for (int p = (w < 129 ? w : 129); p >= 0; p--) {
            if (!counts[p]) continue;
            p4lpmlevel *L = &t->levels[li++];
            L->plen = p;
            L->mask = p == 0 ? 0 : (full ^ ((p == w) ? 0 : ((((p4u)1) << (w - p)) - 1)));
            p4map_init(&L->map, t->nmkeys, counts[p]);
            for (int i = 0; i < t->nent; i++) {
                if (plen[i] != p) continue;
                p4u k[64]; int n = 0;
                for (int j = 0; j < t->nmkeys; j++) if (j != t->lpm_pos) k[n++] = t->ents[i].val[j];
                k[n] = t->ents[i].val[t->lpm_pos];
                p4map_put(&L->map, k, i);
            }
        }
        free(plen);
    } else if (t->mode == P4T_GENERAL) {
        t->order = (int *)calloc((size_t)t->nent + 1, sizeof(int));
        int n = 0;
        for (int i = 0; i < t->nent; i++) if (t->ents[i].kind != P4E_FREE) t->order[n++] = i;
        sort_tbl = t;
        qsort(t->order, (size_t)n, sizeof(int), cmp_order);
        t->norder = n;
    }
}

P4N_EXPORT void p4n_prof_reset(p4sw *sw, int pi, int nmembers, int ngroups)
{
    p4prof *p = &sw->profs[pi];
    for (int i = 0; i < p->nmembers; i++) free(p->members[i].args);
    for (int i = 0; i < p->ngroups; i++) free(p->groups[i].members);
    free(p->members); free(p->groups);
    if (p->member_ix.cap) p4map_free(&p->member_ix);
    if (p->group_ix.cap) p4map_free(&p->group_ix);
    p->nmembers = nmembers; p->ngroups = ngroups;
    p->members = (p4member *)calloc((size_t)nmembers + 1, sizeof(p4member));
    p->groups = (p4group *)calloc((size_t)ngroups + 1, sizeof(p4group));
}
P4N_EXPORT void p4n_prof_member(p4sw *sw, int pi, int mi, int64_t id, int act, int nargs, const uint64_t *args)
{
    p4member *m = &sw->profs[pi].members[mi];
    m->id = id; m->act = act; m->nargs = nargs;
    m->args = (p4i *)calloc((size_t)nargs + 1, sizeof(p4i));
    for (int i = 0; i < nargs; i++) m->args[i] = lohi(args, i);
}
P4N_EXPORT void p4n_prof_group(p4sw *sw, int pi, int gi, int64_t id, int n, const int *members)
{
    p4group *g = &sw->profs[pi].groups[gi];
    g->id = id; g->n = n;
    g->members = (int *)calloc((size_t)n + 1, sizeof(int));
    memcpy(g->members, members, sizeof(int) * (size_t)n);
}
P4N_EXPORT void p4n_prof_commit(p4sw *sw, int pi)
{
    p4prof *p = &sw->profs[pi];
    p4map_init(&p->member_ix, 1, p->nmembers);
    for (int i = 0; i < p->nmembers; i++) { p4u k = (p4u)p->members[i].id; p4map_put(&p->member_ix, &k, i); }
    p4map_init(&p->group_ix, 1, p->ngroups);
    for (int i = 0; i < p->ngroups; i++) { p4u k = (p4u)p->groups[i].id; p4map_put(&p->group_ix, &k, i); }
}

P4N_EXPORT void p4n_vs_set(p4sw *sw, int vi, int n, const uint64_t *vals, const uint64_t *masks)
{
    p4vs *v = &sw->vss[vi];
    free(v->val); free(v->mask);
    v->n = n;
    v->val = (p4u *)calloc((size_t)n + 1, sizeof(p4u)); v->mask = (p4u *)calloc((size_t)n + 1, sizeof(p4u));
    for (int i = 0; i < n; i++) { v->val[i] = (p4u)lohi(vals, i); v->mask[i] = (p4u)lohi(masks, i); }
}

/* entries hit since the last call: (table, slot, last_hit_ns) triples; resets the log */
P4N_EXPORT int p4n_take_hits(p4sw *sw, int64_t *out, int cap)
{
    int n = 0;
    for (int i = 0; i < sw->nhits && n < cap; i++, n++) {
        int ti = sw->hits[2 * i], slot = sw->hits[2 * i + 1];
        out[3 * n] = ti; out[3 * n + 1] = slot; out[3 * n + 2] = sw->tables[ti].last_hit_ns[slot];
    }
    sw->nhits = 0; sw->stamp++;
    return n;
}
P4N_EXPORT int p4n_pending_hits(p4sw *sw) { return sw->nhits; }

P4N_EXPORT p4nout *p4n_out(p4sw *sw) { return &((p4drv *)sw->drv)->out; }
P4N_EXPORT void p4n_stats(p4sw *sw, int64_t *out) { p4drv *d = (p4drv *)sw->drv; out[0] = d->received; out[1] = d->transmitted; out[2] = d->dropped; }
P4N_EXPORT int p4n_take_errors(p4sw *sw, int32_t *out, int cap)
{
    p4drv *d = (p4drv *)sw->drv;
    int n = d->nerr < cap ? d->nerr : cap;
    memcpy(out, d->errs, sizeof(int32_t) * 2 * (size_t)n);
    d->nerr = 0;
    return n;
}

static void out_clear(p4drv *d) { d->out.n = 0; d->out.used = 0; }

/* process_packet(): one frame and everything it spawns; frames in p4n_out() */
P4N_EXPORT int p4n_process(p4sw *sw, int64_t port, const uint8_t *data, int64_t len)
{
    p4drv *d = (p4drv *)sw->drv;
    out_clear(d);
    d->cur_src = 0;
    drv_start(sw, d, port, data, len);
    drv_drain(sw, d, 1);
    return (int)d->out.n;
}

/* process_packet() for each of n frames in turn; each output's src is its frame's index */
P4N_EXPORT int p4n_process_batch(p4sw *sw, int n, const int64_t *ports, const uint8_t *const *datas, const int64_t *lens)
{
    p4drv *d = (p4drv *)sw->drv;
    out_clear(d);
    for (int i = 0; i < n; i++) {
        d->cur_src = i;
        drv_start(sw, d, ports[i], datas[i], lens[i]);
        drv_drain(sw, d, 1);
    }
    return (int)d->out.n;
}

/* run_ingress(): the egress work it makes (p4n_work) */
P4N_EXPORT int p4n_run_ingress(p4sw *sw, int64_t port, const uint8_t *data, int64_t len)
{
    p4drv *d = (p4drv *)sw->drv;
    out_clear(d);
    drv_start(sw, d, port, data, len);
    drv_drain(sw, d, 0);
    drv_take_work(d);
    return (int)d->nwork;
}

/* run_egress(): frames in p4n_out(), new work in p4n_work() */
P4N_EXPORT int p4n_run_egress(p4sw *sw, p4item *item, int qmeta_set, int64_t enq_ts, int64_t enq_qdepth, int64_t deq_qdepth)
{
    p4drv *d = (p4drv *)sw->drv;
    out_clear(d);
    item->qmeta_set = qmeta_set; item->enq_ts = enq_ts; item->enq_qdepth = enq_qdepth; item->deq_qdepth = deq_qdepth;
    d->copy_next = item->copy_id;
    drv_run_egress(sw, d, item);
    drv_release(d, item);
    drv_drain(sw, d, 0);
    drv_take_work(d);
    return (int)d->out.n;
}

/* the switch process's data plane (p4sim/native/c/dataplane.c): run_ingress with the
 * frame's buffer handed over (malloc'd; freed by the pipeline) and run_egress, both with
 * the clock read once for the pass (now_us: every timestamp of the pass reads it; a
 * test's clock callback, when set, is still called instead) */
P4N_EXPORT int p4n_run_ingress_at(p4sw *sw, int64_t now_us, int64_t port, uint8_t *data, int64_t len)
{
    p4drv *d = (p4drv *)sw->drv;
    sw->pass_now = now_us; sw->pass_now_set = 1;
    out_clear(d);
    drv_start_owned(sw, d, port, data, len, 1);
    drv_drain(sw, d, 0);
    drv_take_work(d);
    sw->pass_now_set = 0;
    return (int)d->nwork;
}
P4N_EXPORT int p4n_run_egress_at(p4sw *sw, int64_t now_us, p4item *item, int qmeta_set, int64_t enq_ts, int64_t enq_qdepth,
                                 int64_t deq_qdepth)
{
    sw->pass_now = now_us; sw->pass_now_set = 1;
    int n = p4n_run_egress(sw, item, qmeta_set, enq_ts, enq_qdepth, deq_qdepth);
    sw->pass_now_set = 0;
    return n;
}

P4N_EXPORT p4item *p4n_work(p4sw *sw, int i) { return ((p4drv *)sw->drv)->work[i]; }
P4N_EXPORT int p4n_nwork(p4sw *sw) { return (int)((p4drv *)sw->drv)->nwork; }
P4N_EXPORT void p4n_item_info(p4item *it, int64_t *out) { out[0] = it->port; out[1] = it->priority; out[2] = it->packet_id; out[3] = it->copy_id; out[4] = it->length_reg; }
P4N_EXPORT void p4n_item_free(p4sw *sw, p4item *it) { drv_release((p4drv *)sw->drv, it); }
