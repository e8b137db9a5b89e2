/* p4sim native path: run-time support for the C that p4sim/native/translate.py generates
 * from the Python the engine generates (see p4sim/native/README section in
 * p4sim/README.md). This part comes before the program's own code: values, bit access,
 * field lists, hash algorithms (those of p4sim/runtime/hashes.py), Python's Mersenne
 * Twister (for random()), tables, action profiles, value sets, registers and counters.
 *
 * Values: every P4 scalar is a p4i (signed 128-bit, wrapping: compiled with -fwrapv), so
 * the Python semantics of the generated code (unbounded ints, masked after each
 * operation) hold for every width the translator accepts (at most P4N_MAX_WIDTH bits).
 */
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <stdio.h>
#include <time.h>
#include <pthread.h>

typedef __int128 p4i;
typedef unsigned __int128 p4u;

#define P4N_OK 0
#define P4N_EXIT 1      /* the P4 exit statement (Python: _ExitSignal) */
#define P4N_PERR 2      /* a parser error (Python: _ParserErrorSignal); code in ctx->perr */
#define P4N_ASSERT 3    /* assert/assume failed (Python: _AssertionFailed); text id in ctx->err_arg */
#define P4N_FAIL 4      /* an internal limit (ctx->err_arg says which) */

#define P4N_MAX_DIGEST_VALUES 64
#define P4N_FL_BYTES 1024

/* ------------------------------------------------------------------ arithmetic helpers */
static inline p4i p4_mask(int w) { return w >= 127 ? (p4i)-1 : (((p4i)1) << w) - 1; }
static inline p4i p4_shl_raw(p4i v, p4i a) { return a >= 128 || a < 0 ? 0 : (p4i)((p4u)v << (int)a); }
static inline p4i p4_shr_raw(p4i v, p4i a) { if (a >= 127 || a < 0) return v < 0 ? -1 : 0; return v >> (int)a; }
static inline p4i p4_to_signed(p4i v, int w) { v &= p4_mask(w); return (v >> (w - 1)) ? v - (((p4i)1) << w) : v; }
static inline p4i p4_shl(p4i v, p4i a, int w) { return a >= w ? 0 : p4_shl_raw(v, a) & p4_mask(w); }
static inline p4i p4_shl_signed(p4i v, p4i a, int w) { return a >= w ? 0 : p4_to_signed(p4_shl_raw(v, a), w); }
static inline p4i p4_shr(p4i v, p4i a, int w) { if (a >= w) return v < 0 ? -1 : 0; return v >> (int)a; }
static inline p4i p4_sat_add_u(p4i a, p4i b, int w) { p4i s = a + b, m = p4_mask(w); return s < m ? s : m; }
static inline p4i p4_sat_sub_u(p4i a, p4i b, int w) { p4i s = a - b; (void)w; return s > 0 ? s : 0; }
static inline p4i p4_sat_add_s(p4i a, p4i b, int w) { p4i s = a + b, hi = (((p4i)1) << (w - 1)) - 1, lo = -(((p4i)1) << (w - 1)); return s > hi ? hi : (s < lo ? lo : s); }
static inline p4i p4_sat_sub_s(p4i a, p4i b, int w) { p4i s = a - b, hi = (((p4i)1) << (w - 1)) - 1, lo = -(((p4i)1) << (w - 1)); return s > hi ? hi : (s < lo ? lo : s); }
/* Python's floor division and modulo (the generated code only divides unsigned values) */
static inline p4i p4_floordiv(p4i a, p4i b) { if (!b) return 0; p4i q = a / b; if ((a % b) && ((a < 0) != (b < 0))) q -= 1; return q; }
static inline p4i p4_pymod(p4i a, p4i b) { if (!b) return 0; p4i r = a % b; if (r && ((r < 0) != (b < 0))) r += b; return r; }
static inline p4i p4_div_u(p4i a, p4i b) { return b ? p4_floordiv(a, b) : 0; }
static inline p4i p4_mod_u(p4i a, p4i b) { return b ? p4_pymod(a, b) : 0; }
static inline p4i p4_min(p4i a, p4i b) { return a < b ? a : b; }
static inline p4i p4_max(p4i a, p4i b) { return a > b ? a : b; }

/* ------------------------------------------------------------------ bits of a packet */
static inline p4i p4_read_bits(const uint8_t *data, int64_t off, int w)
{
    p4u v = 0;
    int rem = w;
    if ((off & 7) == 0 && (w & 7) == 0) {
        const uint8_t *p = data + (off >> 3);
        for (int i = 0; i < (w >> 3); i++) v = (v << 8) | p[i];
        return (p4i)v;
    }
    while (rem > 0) {
        int bit = (int)(off & 7), avail = 8 - bit, take = avail < rem ? avail : rem;
        uint8_t b = data[off >> 3];
        v = (v << take) | (p4u)((b >> (avail - take)) & ((1u << take) - 1));
        off += take; rem -= take;
    }
    return (p4i)v;
}

/* A growing MSB-first bit writer (deparser output, field lists). */
typedef struct p4bits {
    uint8_t *buf; int64_t nbits; int64_t cap;
} p4bits;

static void p4b_grow(p4bits *b, int64_t need_bytes)
{
    if (need_bytes <= b->cap) return;
    int64_t cap = b->cap ? b->cap : 256;
    while (cap < need_bytes) cap *= 2;
    uint8_t *nb = (uint8_t *)realloc(b->buf, (size_t)cap);
    if (!nb) abort();
    memset(nb + b->cap, 0, (size_t)(cap - b->cap));
    b->buf = nb; b->cap = cap;
}
static inline void p4b_reset(p4bits *b) { if (b->buf && b->nbits) memset(b->buf, 0, (size_t)((b->nbits + 7) >> 3)); b->nbits = 0; }
static inline void p4b_put(p4bits *b, p4i value, int w)
{
    if (w <= 0) return;
    p4b_grow(b, ((b->nbits + w + 7) >> 3) + 1);
    p4u v = (p4u)value;
    if (w < 128) v &= (((p4u)1) << w) - 1;
    int64_t o = b->nbits;
    int rem = w;
    if ((o & 7) == 0 && (w & 7) == 0) {
        uint8_t *p = b->buf + (o >> 3);
        for (int i = (w >> 3) - 1; i >= 0; i--) { p[i] = (uint8_t)v; v >>= 8; }
        b->nbits += w;
        return;
    }
    while (rem > 0) {
        int bit = (int)(o & 7), avail = 8 - bit, take = avail < rem ? avail : rem;
        unsigned part = (unsigned)((v >> (rem - take)) & ((1u << take) - 1));
        b->buf[o >> 3] |= (uint8_t)(part << (avail - take));
        o += take; rem -= take;
    }
    b->nbits += w;
}
static inline void p4b_put_bytes(p4bits *b, const uint8_t *src, int64_t n)
{
    if (b->nbits & 7) { for (int64_t i = 0; i < n; i++) p4b_put(b, src[i], 8); return; }
    p4b_grow(b, (b->nbits >> 3) + n + 1);
    memcpy(b->buf + (b->nbits >> 3), src, (size_t)n);
    b->nbits += n * 8;
}
static inline int64_t p4b_nbytes(const p4bits *b) { return (b->nbits + 7) >> 3; }

/* ------------------------------------------------------------------ hash algorithms */
enum { P4H_CRC16 = 1, P4H_CRC32, P4H_CRCCCITT, P4H_CSUM16, P4H_XOR16, P4H_XOR32, P4H_IDENTITY, P4H_CUSTOM };

typedef struct p4hash {
    int kind;
    /* custom CRC (p4sim.runtime.hashes.CustomCrc) */
    int width; uint64_t poly, init, xorout; int refin, refout;
    uint64_t table[256], rtable[256]; uint64_t rinit; int use_r;
} p4hash;

static uint64_t p4_reflect(uint64_t v, int n) { uint64_t r = 0; for (int i = 0; i < n; i++) { r = (r << 1) | (v & 1); v >>= 1; } return r; }
static uint8_t p4_rev8(uint8_t b) { return (uint8_t)p4_reflect(b, 8); }

static void p4hash_config(p4hash *h, int width, uint64_t poly, uint64_t init, uint64_t xorout, int refin, int refout)
{
    uint64_t mask = width == 64 ? ~(uint64_t)0 : ((((uint64_t)1) << width) - 1);
    uint64_t top = ((uint64_t)1) << (width - 1);
    h->kind = P4H_CUSTOM; h->width = width; h->poly = poly; h->init = init; h->xorout = xorout;
    h->refin = refin; h->refout = refout;
    for (int d = 0; d < 256; d++) {
        uint64_t rem = ((uint64_t)d) << (width - 8);
        for (int k = 0; k < 8; k++) { rem = (rem & top) ? ((rem << 1) ^ poly) : (rem << 1); rem &= mask; }
        h->table[d] = rem;
    }
    h->use_r = refin && refout;
    if (h->use_r) {
        for (int i = 0; i < 256; i++) h->rtable[i] = p4_reflect(h->table[p4_rev8((uint8_t)i)], width);
        h->rinit = p4_reflect(init, width);
    }
}

static uint64_t p4hash_custom(const p4hash *h, const uint8_t *data, int64_t n)
{
    uint64_t mask = h->width == 64 ? ~(uint64_t)0 : ((((uint64_t)1) << h->width) - 1);
    if (h->use_r) {
        uint64_t crc = h->rinit;
        for (int64_t i = 0; i < n; i++) crc = h->rtable[(crc ^ data[i]) & 0xFF] ^ (crc >> 8);
        return crc ^ h->xorout;
    }
    int shift = h->width - 8;
    uint64_t rem = h->init;
    for (int64_t i = 0; i < n; i++) {
        uint8_t b = h->refin ? p4_rev8(data[i]) : data[i];
        rem = (h->table[(b ^ (rem >> shift)) & 0xFF] ^ (rem << 8)) & mask;
    }
    if (h->refout) rem = p4_reflect(rem, h->width);
    return rem ^ h->xorout;
}

static uint32_t p4_crc32_table[256];
static p4hash p4_crc16_arc, p4_crc_ccitt;
static void p4hash_init_static(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        p4_crc32_table[i] = c;
    }
    p4hash_config(&p4_crc16_arc, 16, 0x8005, 0, 0, 1, 1);
    p4hash_config(&p4_crc_ccitt, 16, 0x1021, 0xFFFF, 0, 0, 0);
}

static uint64_t p4hash_run(const p4hash *h, const uint8_t *d, int64_t n)
{
    switch (h->kind) {
    case P4H_CRC16: return p4hash_custom(&p4_crc16_arc, d, n);
    case P4H_CRCCCITT: return p4hash_custom(&p4_crc_ccitt, d, n);
    case P4H_CRC32: {
        uint32_t c = 0xFFFFFFFFu;
        for (int64_t i = 0; i < n; i++) c = p4_crc32_table[(c ^ d[i]) & 0xFF] ^ (c >> 8);
        return c ^ 0xFFFFFFFFu;
    }
    case P4H_CSUM16: {
        uint64_t total = 0;
        for (int64_t i = 0; i < n; i += 2) total += ((uint64_t)d[i] << 8) | (i + 1 < n ? d[i + 1] : 0);
        while (total >> 16) total = (total & 0xFFFF) + (total >> 16);
        return (~total) & 0xFFFF;
    }
    case P4H_XOR16: case P4H_XOR32: {
        int w = h->kind == P4H_XOR16 ? 2 : 4;
        uint64_t out = 0;
        for (int64_t i = 0; i < n; i += w) {
            uint64_t chunk = 0;
            for (int k = 0; k < w; k++) chunk = (chunk << 8) | (i + k < n ? d[i + k] : 0);
            out ^= chunk;
        }
        return out;
    }
    case P4H_IDENTITY: {
        uint64_t v = 0;
        for (int64_t i = 0; i < n && i < 8; i++) v = (v << 8) | d[i];
        return v;
    }
    case P4H_CUSTOM: return p4hash_custom(h, d, n);
    }
    return 0;
}

/* v1model hash(): (H(fields) % max) + base, max 0 behaves as 1 */
static inline p4i p4_compute_hash(const p4hash *h, p4bits *fl, p4i base, p4i max)
{
    uint64_t v = p4hash_run(h, fl->buf, p4b_nbytes(fl));
    if (max == 0) max = 1;
    return p4_pymod((p4i)v, max) + base;
}

/* ------------------------------------------------------------------ Python's random */
typedef struct p4mt { uint32_t mt[624]; int mti; } p4mt;

static uint32_t p4mt_next(p4mt *s)
{
    static const uint32_t mag01[2] = {0x0u, 0x9908b0dfu};
    uint32_t y;
    if (s->mti >= 624) {
        int kk;
        for (kk = 0; kk < 624 - 397; kk++) {
            y = (s->mt[kk] & 0x80000000u) | (s->mt[kk + 1] & 0x7fffffffu);
            s->mt[kk] = s->mt[kk + 397] ^ (y >> 1) ^ mag01[y & 1u];
        }
        for (; kk < 623; kk++) {
            y = (s->mt[kk] & 0x80000000u) | (s->mt[kk + 1] & 0x7fffffffu);
            s->mt[kk] = s->mt[kk + (397 - 624)] ^ (y >> 1) ^ mag01[y & 1u];
        }
        y = (s->mt[623] & 0x80000000u) | (s->mt[0] & 0x7fffffffu);
        s->mt[623] = s->mt[396] ^ (y >> 1) ^ mag01[y & 1u];
        s->mti = 0;
    }
    y = s->mt[s->mti++];
    y ^= (y >> 11);
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= (y >> 18);
    return y;
}

/* random.getrandbits(k) for 0 < k <= 64, as CPython computes it */
static uint64_t p4mt_bits(p4mt *s, int k)
{
    if (k <= 32) return p4mt_next(s) >> (32 - k);
    uint64_t lo = p4mt_next(s);
    uint64_t hi = p4mt_next(s) >> (64 - k);
    return lo | (hi << 32);
}

/* random.randint(lo, hi) for hi > lo (p4sim's _random: lo when hi <= lo) */
static p4i p4mt_randint(p4mt *s, p4i lo, p4i hi)
{
    if (hi <= lo) return lo;
    p4u n = (p4u)(hi - lo) + 1;
    int k = 0;
    for (p4u t = n; t; t >>= 1) k++;
    if (k > 64) return lo;   /* refused by the translator's checks */
    uint64_t r = p4mt_bits(s, k);
    while ((p4u)r >= n) r = p4mt_bits(s, k);
    return lo + (p4i)r;
}

/* ------------------------------------------------------------------ hash maps */
static inline uint64_t p4_mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h ^= h >> 31; h *= 0xbf58476d1ce4e5b9ull; h ^= h >> 29;
    return h;
}
static inline uint64_t p4_hash_words(const p4u *k, int n)
{
    uint64_t h = 0x12345678u;
    for (int i = 0; i < n; i++) { h = p4_mix(h, (uint64_t)k[i]); h = p4_mix(h, (uint64_t)(k[i] >> 64)); }
    return h;
}

/* open addressing: key = nk p4u words, value = int (entry index), -1 empty */
typedef struct p4map {
    int nk; int cap; int count;
    p4u *keys; int *vals;
} p4map;

static void p4map_init(p4map *m, int nk, int expected)
{
    int cap = 16;
    while (cap < expected * 2 + 2) cap *= 2;
    m->nk = nk; m->cap = cap; m->count = 0;
    m->keys = (p4u *)calloc((size_t)cap * (nk ? nk : 1), sizeof(p4u));
    m->vals = (int *)malloc(sizeof(int) * (size_t)cap);
    for (int i = 0; i < cap; i++) m->vals[i] = -1;
}
static void p4map_free(p4map *m) { free(m->keys); free(m->vals); m->keys = NULL; m->vals = NULL; m->cap = m->count = 0; }
static void p4map_put(p4map *m, const p4u *k, int v);
/* twice the room, every key placed again (keeps the load at most one half) */
static void p4map_grow(p4map *m)
{
    p4map old = *m;
    p4map_init(m, old.nk, old.cap / 2);
    for (int i = 0; i < old.cap; i++)
        if (old.vals[i] >= 0) p4map_put(m, old.keys + (size_t)i * old.nk, old.vals[i]);
    p4map_free(&old);
}
static void p4map_put(p4map *m, const p4u *k, int v)
{
    if (m->count * 2 + 2 > m->cap) p4map_grow(m);
    uint64_t h = p4_hash_words(k, m->nk);
    int i = (int)(h & (uint64_t)(m->cap - 1));
    for (;;) {
        if (m->vals[i] < 0) { memcpy(m->keys + (size_t)i * m->nk, k, sizeof(p4u) * m->nk); m->vals[i] = v; m->count++; return; }
        if (!memcmp(m->keys + (size_t)i * m->nk, k, sizeof(p4u) * m->nk)) { m->vals[i] = v; return; }
        i = (i + 1) & (m->cap - 1);
    }
}
/* remove key k (backward-shift deletion: the probe sequences of the keys after it stay whole) */
static void p4map_del(p4map *m, const p4u *k)
{
    if (!m->cap) return;
    int mask = m->cap - 1, nk = m->nk;
    int i = (int)(p4_hash_words(k, nk) & (uint64_t)mask);
    for (;;) {
        if (m->vals[i] < 0) return;
        if (!memcmp(m->keys + (size_t)i * nk, k, sizeof(p4u) * nk)) break;
        i = (i + 1) & mask;
    }
    m->vals[i] = -1; m->count--;
    for (int j = (i + 1) & mask; m->vals[j] >= 0; j = (j + 1) & mask) {
        int h = (int)(p4_hash_words(m->keys + (size_t)j * nk, nk) & (uint64_t)mask);
        int stays = i <= j ? (h > i && h <= j) : (h > i || h <= j);
        if (stays) continue;
        memcpy(m->keys + (size_t)i * nk, m->keys + (size_t)j * nk, sizeof(p4u) * nk);
        m->vals[i] = m->vals[j]; m->vals[j] = -1; i = j;
    }
}
static inline int p4map_get(const p4map *m, const p4u *k)
{
    if (!m->cap) return -1;
    uint64_t h = p4_hash_words(k, m->nk);
    int i = (int)(h & (uint64_t)(m->cap - 1));
    for (;;) {
        int v = m->vals[i];
        if (v < 0) return -1;
        const p4u *kk = m->keys + (size_t)i * m->nk;
        int eq = 1;
        for (int j = 0; j < m->nk; j++) if (kk[j] != k[j]) { eq = 0; break; }
        if (eq) return v;
        i = (i + 1) & (m->cap - 1);
    }
}

/* ------------------------------------------------------------------ action profiles */
typedef struct p4member { int64_t id; int act; int nargs; p4i *args; } p4member;
typedef struct p4group { int64_t id; int n; int *members; /* indexes into prof->members, by handle */ } p4group;

typedef struct p4prof {
    int nmembers; p4member *members;
    int ngroups; p4group *groups;
    p4map member_ix, group_ix;   /* id -> index */
    p4hash hash;                 /* selector algorithm */
} p4prof;

/* ------------------------------------------------------------------ tables */
enum { P4T_KEYLESS = 0, P4T_EXACT, P4T_LPM, P4T_GENERAL };
enum { P4E_FREE = -1, P4E_CALL = 0, P4E_MEMBER, P4E_GROUP };   /* P4E_FREE: a slot with no entry */

typedef struct p4ent {
    int slot;                   /* position in the Python-side list of entries */
    int kind; int act; int nargs; p4i *args; int64_t ref;
    int64_t prio; int64_t handle;
    p4u *mask, *val;            /* per match key (general tables) */
    int nranges; int *rpos; p4u *rlo, *rhi;
} p4ent;

typedef struct p4lpmlevel { int plen; p4u mask; p4map map; } p4lpmlevel;

typedef struct p4res {
    int hit; int act; int entry; int nargs; p4i args[64];
} p4res;

typedef struct p4tbl {
    int mode; int nkeys; int nmkeys;
    int *match_idx;             /* key positions that are matched (not selector) */
    int nsel; int *sel_idx; int *sel_w;
    int lpm_pos; int lpm_width;
    int nent; p4ent *ents;      /* slots 0..nent-1 (free ones P4E_FREE), room for cap */
    int cap;
    int ix_dirty;               /* lpm/general: the index must be built again (p4n_table_commit) */
    p4map exact;                /* exact: kept up to date by every put and delete */
    int nlevels; p4lpmlevel *levels;
    int *order; int norder;     /* general: priority desc, handle asc */
    /* default action */
    int def_act; int def_nargs; p4i def_args[64];
    p4prof *prof;               /* implementation (profile or selector), NULL without */
    int has_selector;
    int hit_cb;                 /* 1: each hit goes to the Python side (direct counter/meter) */
    int last_color;             /* direct meter colour of the last apply, -1 = None */
    int64_t *last_hit_ns;       /* per slot, written on hits (synced to Python entries) */
    int *hit_stamp;             /* per slot: batch stamp of the last hit logged */
} p4tbl;

static void p4tbl_free_entries(p4tbl *t)
{
    for (int i = 0; i < t->nent; i++) {
        p4ent *e = &t->ents[i];
        free(e->args); free(e->mask);      /* mask: the key's one block (p4n_table_put) */
    }
    free(t->ents); t->ents = NULL; t->nent = 0; t->cap = 0; t->ix_dirty = 1;
    if (t->exact.cap) p4map_free(&t->exact);
    for (int i = 0; i < t->nlevels; i++) p4map_free(&t->levels[i].map);
    free(t->levels); t->levels = NULL; t->nlevels = 0;
    free(t->order); t->order = NULL; t->norder = 0;
    free(t->last_hit_ns); t->last_hit_ns = NULL;
    free(t->hit_stamp); t->hit_stamp = NULL;
}

static inline int p4tbl_match(const p4tbl *t, const p4u *keys)
{
    /* keys: one per table key (selector keys included), each within its width */
    switch (t->mode) {
    case P4T_KEYLESS: return -1;
    case P4T_EXACT: {
        p4u mk[64];
        for (int i = 0; i < t->nmkeys; i++) mk[i] = keys[t->match_idx[i]];
        return p4map_get(&t->exact, mk);
    }
    case P4T_LPM: {
        p4u mk[64];
        int n = 0;
        p4u v = 0;
        for (int i = 0; i < t->nmkeys; i++) {
            if (i == t->lpm_pos) v = keys[t->match_idx[i]];
            else mk[n++] = keys[t->match_idx[i]];
        }
        for (int l = 0; l < t->nlevels; l++) {
            mk[n] = v & t->levels[l].mask;
            int e = p4map_get(&t->levels[l].map, mk);
            if (e >= 0) return e;
        }
        return -1;
    }
    default: {
        for (int o = 0; o < t->norder; o++) {
            const p4ent *e = &t->ents[t->order[o]];
            int ok = 1;
            for (int i = 0; i < t->nmkeys; i++)
                if ((keys[t->match_idx[i]] & e->mask[i]) != e->val[i]) { ok = 0; break; }
            if (!ok) continue;
            for (int r = 0; r < e->nranges; r++) {
                p4u kv = keys[t->match_idx[e->rpos[r]]];
                if (kv < e->rlo[r] || kv > e->rhi[r]) { ok = 0; break; }
            }
            if (ok) return t->order[o];
        }
        return -1;
    }
    }
}

/* ------------------------------------------------------------------ value sets */
typedef struct p4vs { int n; p4u *val; p4u *mask; } p4vs;
static inline int p4vs_match(const p4vs *vs, p4i key)
{
    for (int i = 0; i < vs->n; i++) if (((p4u)key & vs->mask[i]) == (vs->val[i] & vs->mask[i])) return 1;
    return 0;
}

/* ------------------------------------------------------------------ registers, counters */
typedef struct p4reg { int64_t size; int width; uint64_t mask; uint64_t *cells; } p4reg;
typedef struct p4ctr { int64_t size; uint64_t *packets; uint64_t *bytes; } p4ctr;

static inline p4i p4reg_read(const p4reg *r, p4i i) { return (i >= 0 && i < r->size) ? (p4i)r->cells[(int64_t)i] : 0; }
static inline void p4reg_write(p4reg *r, p4i i, p4i v) { if (i >= 0 && i < r->size) r->cells[(int64_t)i] = (uint64_t)v & r->mask; }
static inline void p4ctr_count(p4ctr *c, p4i i, p4i nbytes) { if (i >= 0 && i < c->size) { c->packets[(int64_t)i] += 1; c->bytes[(int64_t)i] += (uint64_t)nbytes; } }

/* ------------------------------------------------------------------ wide values
 * A field wider than the translator's scalars (a padding field, an IPv6 address) is
 * kept as K little-endian 64-bit words; the generated code only moves, compares,
 * extracts, emits, hashes and matches such a value (anything else is refused). */
static inline void p4w_read(const uint8_t *data, int64_t off, int w, uint64_t *dst)
{
    int k = (w + 63) / 64;
    int top = w - 64 * (k - 1);
    dst[k - 1] = (uint64_t)p4_read_bits(data, off, top);
    off += top;
    for (int i = k - 2; i >= 0; i--) { dst[i] = (uint64_t)p4_read_bits(data, off, 64); off += 64; }
}
static inline void p4w_put(p4bits *b, const uint64_t *src, int w)
{
    int k = (w + 63) / 64;
    int top = w - 64 * (k - 1);
    p4b_put(b, (p4i)src[k - 1], top);
    for (int i = k - 2; i >= 0; i--) p4b_put(b, (p4i)src[i], 64);
}
static inline p4u p4w_u128(const uint64_t *src) { return ((p4u)src[1] << 64) | src[0]; }
