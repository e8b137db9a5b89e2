/* p4sim native path: the per-packet context and the switch's state as the generated
 * functions see them (after the program's types, before its functions). */

typedef struct p4sw p4sw;

typedef struct p4ctx {
    p4sw *sw;
    const uint8_t *data; int64_t len; int64_t offset_bits;   /* parser input and cursor */
    p4bits emitted;                                          /* deparser output */
    int clone_set; p4i clone_session; int clone_fl_set; p4i clone_fl;
    int resubmit_set; p4i resubmit;
    int recirc_set; p4i recirc;
    int trunc_set; p4i trunc;
    int digest_set; int digest_name; int digest_n; p4i digest_vals[P4N_MAX_DIGEST_VALUES];
    p4i length_delta;                  /* setValid() minus setInvalid() bytes */
    void *std;                         /* standard_metadata of the block being run */
    p4i now_us;
    int perr; int err_arg;
    p4i dmeter[P4N_NDMETERS];          /* colour of each direct meter's last hit, -1 = None */
} p4ctx;

/* Callbacks into Python: the state whose semantics stay there (meters, direct
 * counters/meters of a hit, the replication engine, digests, a test's clock). */
typedef int64_t (*p4n_clock_fn)(void);
typedef int (*p4n_meter_fn)(int meter, int64_t index, int64_t nbytes, int64_t now_us);
typedef int (*p4n_hit_fn)(int table, int slot, int64_t nbytes, int64_t now_us);
typedef int (*p4n_digest_fn)(int name, int n, const uint64_t *lohi, int64_t now_us);
typedef int (*p4n_pre_fn)(int kind, int64_t id, int64_t *out, int cap);

struct p4sw {
    int ntables; p4tbl *tables;
    int nprofs; p4prof *profs;
    int nregs; p4reg *regs;
    int nctrs; p4ctr *ctrs;
    int nvss; p4vs *vss;
    int nhashes; p4hash *hashes;
    p4mt rng;
    p4n_clock_fn clock_cb; p4n_meter_fn meter_cb; p4n_hit_fn hit_cb;
    p4n_digest_fn digest_cb; p4n_pre_fn pre_cb;
    int64_t clock_start_ns;
    int64_t pass_now; int pass_now_set;   /* the data plane's clock reading for one pass (p4n_*_at) */
    int64_t priority_queues; int64_t max_repasses;
    /* entries hit since the Python side last looked (table, slot), for last_hit_ns */
    int stamp; int nhits; int caphits; int32_t *hits;
    void *drv;                         /* the v1model driver's state (rt_driver.h) */
};

static inline int64_t p4n_clock(p4sw *sw)
{
    if (sw->clock_cb) return sw->clock_cb();
    if (sw->pass_now_set) return sw->pass_now;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t ns = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec - sw->clock_start_ns;
    return ns >= 0 ? ns / 1000 : -((-ns + 999) / 1000);
}

static inline int p4n_meter_execute(p4ctx *ctx, int idx, p4i index, p4i nbytes, p4i now)
{
    int c = ctx->sw->meter_cb ? ctx->sw->meter_cb(idx, (int64_t)index, (int64_t)nbytes, (int64_t)now) : -2;
    if (c < 0) ctx->err_arg = -1;
    return c;
}

static void p4n_log_hit(p4sw *sw, int ti, int slot)
{
    p4tbl *t = &sw->tables[ti];
    if (t->hit_stamp[slot] == sw->stamp) return;
    t->hit_stamp[slot] = sw->stamp;
    if (sw->nhits + 1 > sw->caphits) {
        int cap = sw->caphits ? sw->caphits * 2 : 256;
        int32_t *nh = (int32_t *)realloc(sw->hits, sizeof(int32_t) * 2 * (size_t)cap);
        if (!nh) abort();
        sw->hits = nh; sw->caphits = cap;
    }
    sw->hits[2 * sw->nhits] = ti; sw->hits[2 * sw->nhits + 1] = slot;
    sw->nhits++;
}

static inline void p4n_set_args(p4res *r, int act, int nargs, const p4i *args)
{
    r->act = act; r->nargs = nargs;
    for (int i = 0; i < nargs && i < P4N_MAXARGS; i++) r->args[i] = args[i];
}

/* Table.apply: lookup, then BMv2's per-hit side effects (p4sim/runtime/tables.py) */
static int p4n_table_apply(p4ctx *ctx, int ti, const p4u *keys, const int *valid, p4i nbytes, p4i now, p4res *r)
{
    p4sw *sw = ctx->sw;
    p4tbl *t = &sw->tables[ti];
    int e = p4tbl_match(t, keys);
    if (e < 0) {
        r->hit = 0; r->entry = -1;
        p4n_set_args(r, t->def_act, t->def_nargs, t->def_args);
        t->last_color = -1;
        return 0;
    }
    p4ent *en = &t->ents[e];
    r->hit = 1; r->entry = e;
    if (en->kind == P4E_CALL) {
        p4n_set_args(r, en->act, en->nargs, en->args);
    } else {
        p4prof *pf = t->prof;
        if (!pf) return -1;
        if (en->kind == P4E_MEMBER) {
            p4u k = (p4u)en->ref;
            int mi = p4map_get(&pf->member_ix, &k);
            if (mi < 0) return -1;
            p4n_set_args(r, pf->members[mi].act, pf->members[mi].nargs, pf->members[mi].args);
        } else {
            p4u k = (p4u)en->ref;
            int gi = p4map_get(&pf->group_ix, &k);
            if (gi < 0) return -1;
            p4group *g = &pf->groups[gi];
            if (g->n == 0) {
                r->act = 0; r->nargs = 0;     /* an empty group: no action (still a hit) */
            } else {
                uint8_t buf[64 * 16 + 8];
                memset(buf, 0, sizeof buf);
                p4bits fl = { buf, 0, (int64_t)sizeof buf };
                for (int i = 0; i < t->nsel; i++)
                    if (valid[t->sel_idx[i]]) p4b_put(&fl, (p4i)keys[t->sel_idx[i]], t->sel_w[i]);
                uint64_t h = p4hash_run(&pf->hash, fl.buf, p4b_nbytes(&fl)) & 0xFFFFFFFFu;
                p4member *m = &pf->members[g->members[h % (uint64_t)g->n]];
                p4n_set_args(r, m->act, m->nargs, m->args);
            }
        }
    }
    if (t->hit_cb) {
        int c = sw->hit_cb ? sw->hit_cb(ti, en->slot, (int64_t)nbytes, (int64_t)now) : -2;
        if (c < -1) return -1;
        t->last_color = c;
    } else {
        t->last_color = -1;
        t->last_hit_ns[e] = (int64_t)now * 1000;
        p4n_log_hit(sw, ti, e);
    }
    return 0;
}

static inline void p4n_ctx_init(p4ctx *ctx, p4sw *sw, const uint8_t *data, int64_t len, int64_t now)
{
    uint8_t *keep = ctx->emitted.buf; int64_t cap = ctx->emitted.cap;
    memset(ctx, 0, offsetof(p4ctx, dmeter));
    ctx->emitted.buf = keep; ctx->emitted.cap = cap; ctx->emitted.nbits = 0;
    if (keep) memset(keep, 0, (size_t)cap);
    ctx->sw = sw; ctx->data = data; ctx->len = len; ctx->now_us = now;
    for (int i = 0; i < P4N_NDMETERS; i++) ctx->dmeter[i] = -1;
}
