/* The NIC emulator's per-frame hot loop (host/nic/native.py loads it; host/nic/README.md,
 * "The native hot loop").  Compiled at load with the system gcc and cached by source hash
 * (p4sim.cbuild).  What runs here is per frame and nothing else:
 *   - tx: a sender QP's due frames built from its templates straight into a sendmmsg
 *     arena (PSN, AckReq bit, RETH, ICRC), paced, with the RC requester's sequence
 *     bookkeeping; frames handed in by Python (CNPs, ACKs, NAKs) copied into the same
 *     arena; then one sendmmsg loop with host/nic/mmsg.py's refusal rules;
 *   - rx: recvmmsg with PacketSocket.recv_many's rules, and for each frame the parse of
 *     frames.parse_roce and the ICRC check of frames.verify_icrc.
 *   - a receiver's replies to a batch it accepted whole (nicc_rx_replies: its CNPs and
 *     coalesced ACKs from each flow's templates) and its burst (nicc_rx_burst: wait,
 *     read, accept, answer, send, until Python's turn);
 *   - a sender's burst (nicc_burst): besides the frames, the replies that only move
 *     state forward are taken in C: a cumulative ACK (the RC requester's acked PSN and
 *     the AETH's MSN, rc.Requester.on_ack and SenderQP._on_msn) and a CNP (DCQCN's rate
 *     cut, dcqcn.ReactionPoint.on_cnp), and DCQCN's timers and byte counter run here
 *     while the burst lasts (ReactionPoint.advance, on_sent), with the same arithmetic;
 * Python keeps the control: when a frame may leave (PFC, the retry timer), a NAK's
 * go-back-N, QP setup, and the counters it reports (C's counts are taken after). */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <poll.h>
#include <time.h>

#define API __attribute__((visibility("default")))
#define PSN_MASK 0xFFFFFFu

/* ---- CRC-32/IEEE, zlib.crc32's convention (crc in and out already inverted) ---- */
static uint32_t T[8][256];
static int t_ready;

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        T[0][i] = c;
    }
    for (int i = 0; i < 256; i++)
        for (int s = 1; s < 8; s++) T[s][i] = (T[s - 1][i] >> 8) ^ T[0][T[s - 1][i] & 0xFF];
    t_ready = 1;
}

static uint32_t crc_upd(uint32_t crc, const uint8_t *p, int64_t n) {
    uint32_t c = ~crc;
    while (n >= 8) {
        uint32_t a = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        uint32_t b = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
        c = T[7][a & 0xFF] ^ T[6][(a >> 8) & 0xFF] ^ T[5][(a >> 16) & 0xFF] ^ T[4][a >> 24] ^
            T[3][b & 0xFF] ^ T[2][(b >> 8) & 0xFF] ^ T[1][(b >> 16) & 0xFF] ^ T[0][b >> 24];
        p += 8; n -= 8;
    }
    while (n-- > 0) c = T[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
    return ~c;
}

API uint32_t nicc_crc32(uint32_t crc, const uint8_t *p, int64_t n) {
    if (!t_ready) crc_init();
    return crc_upd(crc, p, n);
}

/* ---- the tx arena: slots, mmsghdr and iovec built once ---- */
typedef struct {
    int cap, slot, n;
    uint8_t *buf;
    struct mmsghdr *h;
    struct iovec *iov;
} tx_t;

API tx_t *nicc_tx_new(int cap, int slot) {
    if (!t_ready) crc_init();
    tx_t *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->cap = cap; t->slot = slot;
    t->buf = malloc((size_t)cap * slot);
    t->h = calloc(cap, sizeof *t->h);
    t->iov = calloc(cap, sizeof *t->iov);
    if (!t->buf || !t->h || !t->iov) { free(t->buf); free(t->h); free(t->iov); free(t); return NULL; }
    for (int i = 0; i < cap; i++) {
        t->iov[i].iov_base = t->buf + (size_t)i * slot;
        t->h[i].msg_hdr.msg_iov = &t->iov[i];
        t->h[i].msg_hdr.msg_iovlen = 1;
    }
    return t;
}

API void nicc_tx_free(tx_t *t) {
    if (!t) return;
    free(t->buf); free(t->h); free(t->iov); free(t);
}

API int nicc_tx_count(tx_t *t) { return t->n; }

/* Copy one frame into the next slot: 0, or -1 when it does not fit (arena full, or a
 * frame larger than a slot: the caller flushes and sends it alone). */
API int nicc_tx_push(tx_t *t, const uint8_t *p, int64_t len) {
    if (t->n >= t->cap || len > t->slot) return -1;
    memcpy(t->iov[t->n].iov_base, p, (size_t)len);
    t->iov[t->n].iov_len = (size_t)len;
    t->n++;
    return 0;
}

/* The frames of the arena (for tests): slot i's bytes and length. */
API const uint8_t *nicc_tx_frame(tx_t *t, int i, int64_t *len) {
    *len = (int64_t)t->iov[i].iov_len;
    return t->iov[i].iov_base;
}

/* Send every frame of the arena in order, each tried once, as MmsgSender.send: a
 * refused frame (EAGAIN, ENOBUFS, ENETDOWN) counts in *refused and the next ones are
 * still tried; EINTR is retried at most 3 times per batch.  Returns 0, or the errno of
 * any other error (the arena is emptied either way). */
#define BATCH 64
API int nicc_tx_flush(tx_t *t, int fd, int64_t *refused) {
    int n = t->n, i = 0, interrupted = 0, err = 0;
    *refused = 0;
    while (i < n) {
        int count = n - i < BATCH ? n - i : BATCH;
        int done = sendmmsg(fd, t->h + i, count, MSG_DONTWAIT);
        if (done < 0) {
            int e = errno;
            if (e == EINTR && interrupted < 3) { interrupted++; continue; }
            if (e != EAGAIN && e != EWOULDBLOCK && e != ENOBUFS && e != ENETDOWN && e != EINTR) {
                err = e; break;
            }
            (*refused)++;
            done = 1;
        } else if (done == 0) {
            (*refused)++;
            done = 1;
        }
        i += done < count ? done : count;
    }
    t->n = 0;
    return err;
}

/* ---- a sender QP's frames ---- */
enum { K_ONLY, K_FIRST, K_MIDDLE, K_LAST };
typedef struct {
    uint8_t head[4][64];
    int32_t head_len[4], ext_len[4], tail_len[4];
    uint32_t crc_head[4];
    uint8_t *tail[4];
} tpl_t;

API tpl_t *nicc_tpl_new(void) { return calloc(1, sizeof(tpl_t)); }

API void nicc_tpl_free(tpl_t *tp) {
    if (!tp) return;
    for (int k = 0; k < 4; k++) free(tp->tail[k]);
    free(tp);
}

/* Template ``kind``: the bytes up to the BTH's DestQP, the CRC of the masked invariant
 * prefix, the padded payload (frames.FrameTemplate's _head, _crc_head, _tail). */
API int nicc_tpl_set(tpl_t *tp, int kind, const uint8_t *head, int hl, uint32_t crc_head,
                     const uint8_t *tail, int tl, int ext_len) {
    if (kind < 0 || kind > 3 || hl > 64 || hl < 0 || tl < 0) return -1;
    uint8_t *copy = malloc(tl ? (size_t)tl : 1);
    if (!copy) return -1;
    memcpy(copy, tail, (size_t)tl);
    free(tp->tail[kind]);
    tp->tail[kind] = copy;
    memcpy(tp->head[kind], head, (size_t)hl);
    tp->head_len[kind] = hl; tp->tail_len[kind] = tl; tp->ext_len[kind] = ext_len;
    tp->crc_head[kind] = crc_head;
    return 0;
}

/* State words of nicc_qp_fill (host/nic/native.py names them). */
enum {
    S_NEXT, S_HIGH, S_ACKED, S_TOTAL, S_WINDOW, S_WINDOW_PKTS, S_ACKREQ_EVERY, S_PER_MSG,
    S_START_PSN, S_MSG_BYTES, S_MTU, S_LAST_LEN, S_BASE_VA, S_RKEY, S_RATE_LIMIT, S_BC_LEFT,
    S_STOP_AT_END,
    S_OUT_N, S_OUT_RETX, S_OUT_MSGS, S_OUT_BYTES, S_OUT_PAYLOAD, S_OUT_ACKREQS, S_OUT_LAST_END,
    S_OUT_AGAIN, S_SKIP,
    /* the burst's replies and DCQCN (host/nic/native.py names them) */
    S_PEER_IP, S_SQPN, S_REACT, S_ACKED_MSN, S_RP_TIMER_ROUNDS, S_RP_BYTE_ROUNDS, S_RP_CNPS,
    S_RP_DECREASES, S_RP_PKTS, S_RP_BC_PKTS, S_RP_FR_ROUNDS,
    S_OUT_PROGRESS, S_OUT_ACKED_MSGS, S_OUT_CNPS, S_OUT_RX,
    S_WORDS
};
enum { D_NOW, D_NEXT_AT, D_GAP, D_SLACK, D_FIRST_T, D_LAST_T, D_RX_FIRST_T, D_RX_LAST_T, D_WORDS };
/* DCQCN reaction point words (dcqcn.ReactionPoint's fields and DcqcnParams') */
enum {
    RP_RATE, RP_TARGET, RP_ALPHA, RP_NOW, RP_NEXT_ALPHA, RP_NEXT_RATE, RP_LAST_DEC,
    RP_LINE, RP_MIN, RP_G, RP_ALPHA_TIMER, RP_RATE_TIMER, RP_AI, RP_HAI, RP_MIN_DEC, RP_WORDS
};

static inline void be32(uint8_t *p, uint32_t v) { p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = v; }
static inline void be64(uint8_t *p, uint64_t v) { be32(p, (uint32_t)(v >> 32)); be32(p + 4, (uint32_t)v); }

/* ---- DCQCN's reaction point (dcqcn.ReactionPoint), the same operations in the same
 * order, so the same doubles come out ---- */

/* Python's float floor division (CPython's float_floor_div: fmod, then the sign fix-up). */
static double py_floordiv(double vx, double wx) {
    double mod = fmod(vx, wx), div = (vx - mod) / wx;
    if (mod != 0.0) {
        if ((wx < 0) != (mod < 0)) div -= 1.0;
    }
    if (div != 0.0) {
        double fl = floor(div);
        if (div - fl > 0.5) fl += 1.0;
        return fl;
    }
    return copysign(0.0, vx / wx);
}

static void rp_increase(double *rp, int64_t *s) {
    int64_t f = s[S_RP_FR_ROUNDS], tr = s[S_RP_TIMER_ROUNDS], br = s[S_RP_BYTE_ROUNDS];
    int64_t hi = tr > br ? tr : br, lo = tr < br ? tr : br;
    if (hi < f) {
        /* fast recovery */
    } else if (lo > f) {
        rp[RP_TARGET] += (double)(lo - f) * rp[RP_HAI];           /* hyper increase */
    } else {
        rp[RP_TARGET] += rp[RP_AI];                               /* additive increase */
    }
    if (rp[RP_LINE] < rp[RP_TARGET]) rp[RP_TARGET] = rp[RP_LINE];
    double r = (rp[RP_TARGET] + rp[RP_RATE]) / 2;
    rp[RP_RATE] = rp[RP_LINE] < r ? rp[RP_LINE] : r;
}

/* ReactionPoint.advance: the α timer and the rate timer up to ``now``. */
static void rp_advance(double *rp, int64_t *s, double now) {
    if (now < rp[RP_NOW]) return;
    rp[RP_NOW] = now;
    if (rp[RP_NEXT_ALPHA] <= now) {
        double n = (double)((int64_t)py_floordiv(now - rp[RP_NEXT_ALPHA], rp[RP_ALPHA_TIMER]) + 1);
        rp[RP_ALPHA] *= pow(1 - rp[RP_G], n);
        rp[RP_NEXT_ALPHA] += n * rp[RP_ALPHA_TIMER];
    }
    while (rp[RP_NEXT_RATE] <= now) {
        if (rp[RP_RATE] >= rp[RP_LINE]) {                         /* recovered: skip idle expiries */
            int64_t n = (int64_t)py_floordiv(now - rp[RP_NEXT_RATE], rp[RP_RATE_TIMER]) + 1;
            s[S_RP_TIMER_ROUNDS] += n;
            rp[RP_NEXT_RATE] += (double)n * rp[RP_RATE_TIMER];
            break;
        }
        s[S_RP_TIMER_ROUNDS]++;
        rp[RP_NEXT_RATE] += rp[RP_RATE_TIMER];
        rp_increase(rp, s);
    }
}

/* ReactionPoint.on_sent: ``k`` packets sent at ``now`` feed the byte counter. */
static void rp_on_sent(double *rp, int64_t *s, double now, int64_t k) {
    rp_advance(rp, s, now);
    if (isinf(rp[RP_NEXT_RATE])) return;                           /* never cut: nothing to recover */
    s[S_RP_PKTS] += k;
    while (s[S_RP_PKTS] >= s[S_RP_BC_PKTS]) {
        s[S_RP_PKTS] -= s[S_RP_BC_PKTS];
        s[S_RP_BYTE_ROUNDS]++;
        rp_increase(rp, s);
    }
}

/* ReactionPoint.on_cnp: cut the rate by α/2, raise α, restart both increase counters. */
static void rp_on_cnp(double *rp, int64_t *s, double now) {
    rp_advance(rp, s, now);
    s[S_RP_CNPS]++;
    if (now - rp[RP_LAST_DEC] < rp[RP_MIN_DEC]) return;
    rp[RP_LAST_DEC] = now;
    s[S_RP_DECREASES]++;
    rp[RP_TARGET] = rp[RP_RATE];
    double cut = rp[RP_RATE] * (1 - rp[RP_ALPHA] / 2);
    rp[RP_RATE] = cut > rp[RP_MIN] ? cut : rp[RP_MIN];
    rp[RP_ALPHA] = (1 - rp[RP_G]) * rp[RP_ALPHA] + rp[RP_G];
    s[S_RP_TIMER_ROUNDS] = s[S_RP_BYTE_ROUNDS] = s[S_RP_PKTS] = 0;
    rp[RP_NEXT_ALPHA] = now + rp[RP_ALPHA_TIMER];
    rp[RP_NEXT_RATE] = now + rp[RP_RATE_TIMER];
}

/* The reaction point's operations one at a time (tests: against dcqcn.ReactionPoint).
 * op 0 advance, 1 on_sent of ``k`` packets, 2 on_cnp. */
API void nicc_rp_op(double *rp, int64_t *s, int op, double now, int64_t k) {
    if (op == 0) rp_advance(rp, s, now);
    else if (op == 1) rp_on_sent(rp, s, now, k);
    else rp_on_cnp(rp, s, now);
}

/* SenderQP.poll_batch's loop once Python has said a frame may leave now (not paused,
 * retry timer served, DCQCN advanced): frames while the message count, the window and
 * the pacer allow, at most ``limit``, into the arena.  Stops after the frame that ends
 * the byte counter's round (S_BC_LEFT; the rate changes there) and after a message's end
 * when a source-port move waits (S_STOP_AT_END).  The sequence numbers of the frames
 * that asked for an ACK go to ``ackreqs``; S_OUT_AGAIN says it stopped for Python's
 * control (call again once it has run).  Returns the frames made. */
static int fill_core(tx_t *t, const tpl_t *tp, int64_t *s, double *d, int64_t *ackreqs, double *acktimes,
                     int limit, int acc) {
    int64_t next = s[S_NEXT], high = s[S_HIGH], acked = s[S_ACKED], total = s[S_TOTAL];
    int64_t per = s[S_PER_MSG], every = s[S_ACKREQ_EVERY], wp = s[S_WINDOW_PKTS];
    int64_t bc = s[S_BC_LEFT];
    double now = d[D_NOW], next_at = d[D_NEXT_AT], gap = d[D_GAP];
    double lag = gap > d[D_SLACK] ? gap : d[D_SLACK];
    int n = 0, nack = acc ? (int)s[S_OUT_ACKREQS] : 0, last_end = 0, again = 0;
    int64_t retx = 0, msgs = 0, bytes = 0, payload = 0;
    while (n < limit && t->n < t->cap) {
        if (total >= 0 && next >= total) break;
        if (!(next - acked < s[S_WINDOW])) break;
        int64_t seq = next, msg = seq / per, i = seq % per;
        int last = i == per - 1;
        int kind = per == 1 ? K_ONLY : i == 0 ? K_FIRST : last ? K_LAST : K_MIDDLE;
        /* a frame larger than a slot is never made (host.nic.native refuses such a
         * template; this stops a heap overflow should one get here anyway) */
        if ((int64_t)tp->head_len[kind] + 4 + (tp->ext_len[kind] == 16 ? 16 : 0) + tp->tail_len[kind] + 4 > t->slot)
            break;
        if (s[S_RATE_LIMIT]) {
            if (now < next_at) break;
            double lo = now - lag;
            next_at = (lo > next_at ? lo : next_at) + gap;
        }
        uint32_t psn = (uint32_t)((s[S_START_PSN] + seq) & PSN_MASK);
        int ackreq = last || (seq + 1) % every == 0 || (wp > 0 && seq - acked + 1 >= wp);
        uint8_t *f = t->iov[t->n].iov_base, *p = f;
        memcpy(p, tp->head[kind], (size_t)tp->head_len[kind]); p += tp->head_len[kind];
        be32(p, psn | (ackreq ? 0x80000000u : 0));
        uint32_t crc = crc_upd(tp->crc_head[kind], p, 4); p += 4;
        if (tp->ext_len[kind] == 16) {
            be64(p, (uint64_t)s[S_BASE_VA] + (uint64_t)msg * (uint64_t)s[S_MSG_BYTES]);
            be32(p + 8, (uint32_t)s[S_RKEY]);
            be32(p + 12, (uint32_t)s[S_MSG_BYTES]);
            crc = crc_upd(crc, p, 16); p += 16;
        }
        memcpy(p, tp->tail[kind], (size_t)tp->tail_len[kind]);
        crc = crc_upd(crc, p, tp->tail_len[kind]); p += tp->tail_len[kind];
        p[0] = crc; p[1] = crc >> 8; p[2] = crc >> 16; p[3] = crc >> 24; p += 4;
        t->iov[t->n].iov_len = (size_t)(p - f);
        t->n++;
        int is_new = seq >= high;
        if (!is_new) retx++;
        next = seq + 1;
        if (next > high) high = next;
        if (ackreq) {
            if (acktimes) acktimes[nack] = now;
            ackreqs[nack++] = seq;
        }
        if (last && is_new) msgs++;
        bytes += p - f;
        payload += last ? s[S_LAST_LEN] : s[S_MTU];
        n++;
        last_end = last;
        if (bc > 0 && --bc == 0) { again = 1; break; }
        if (last && s[S_STOP_AT_END]) { again = 1; break; }
    }
    s[S_NEXT] = next; s[S_HIGH] = high; s[S_BC_LEFT] = bc;
    if (acc) {
        s[S_OUT_N] += n; s[S_OUT_RETX] += retx; s[S_OUT_MSGS] += msgs; s[S_OUT_BYTES] += bytes;
        s[S_OUT_PAYLOAD] += payload;
        if (n) {
            if (s[S_OUT_N] == n) d[D_FIRST_T] = now;
            d[D_LAST_T] = now;
        }
    } else {
        s[S_OUT_N] = n; s[S_OUT_RETX] = retx; s[S_OUT_MSGS] = msgs; s[S_OUT_BYTES] = bytes;
        s[S_OUT_PAYLOAD] = payload;
    }
    s[S_OUT_ACKREQS] = nack; s[S_OUT_LAST_END] = last_end; s[S_OUT_AGAIN] = again;
    d[D_NEXT_AT] = next_at;
    return n;
}

API int nicc_qp_fill(tx_t *t, const tpl_t *tp, int64_t *s, double *d, int64_t *ackreqs, int limit) {
    return fill_core(t, tp, s, d, ackreqs, NULL, limit, 0);
}

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- rx ---- */
typedef struct {
    int cap, slot, names;
    uint8_t *buf, *name;
    struct mmsghdr *h;
    struct iovec *iov;
} rx_t;

API rx_t *nicc_rx_new(int cap, int slot, int names) {
    if (!t_ready) crc_init();
    rx_t *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->cap = cap; r->slot = slot; r->names = names;
    r->buf = malloc((size_t)cap * slot);
    r->name = calloc(cap, 32);
    r->h = calloc(cap, sizeof *r->h);
    r->iov = calloc(cap, sizeof *r->iov);
    if (!r->buf || !r->name || !r->h || !r->iov) {
        free(r->buf); free(r->name); free(r->h); free(r->iov); free(r); return NULL;
    }
    for (int i = 0; i < cap; i++) {
        r->iov[i].iov_base = r->buf + (size_t)i * slot;
        r->iov[i].iov_len = (size_t)slot;
        r->h[i].msg_hdr.msg_iov = &r->iov[i];
        r->h[i].msg_hdr.msg_iovlen = 1;
    }
    return r;
}

API void nicc_rx_free(rx_t *r) {
    if (!r) return;
    free(r->buf); free(r->name); free(r->h); free(r->iov); free(r);
}

API uint8_t *nicc_rx_buf(rx_t *r) { return r->buf; }

/* Words per received frame in the record array. */
enum {
    R_OFF, R_LEN, R_KIND, R_L3, R_DSCP, R_ECN, R_SPORT, R_OPCODE, R_BECN, R_DQPN, R_ACKREQ,
    R_PSN, R_PAYLOAD, R_EXT_AT, R_EXT_LEN, R_ICRC_OK, R_SRC_IP, R_DST_IP, R_FAST, R_WORDS
};
enum { KIND_OTHER, KIND_PFC, KIND_ROCE };

static int ext_len_of(int op) { return op == 0x06 || op == 0x0A ? 16 : op == 0x11 ? 4 : 0; }

/* frames.parse_roce and frames.verify_icrc (at the Ethernet header's end, as the NIC
 * calls it) of one frame into its record. */
static void classify(const uint8_t *f, int64_t len, int64_t *r) {
    r[R_KIND] = KIND_OTHER; r[R_ICRC_OK] = 0; r[R_FAST] = 0;
    if (len >= 14 && f[12] == 0x88 && f[13] == 0x08) r[R_KIND] = KIND_PFC;
    int off = 14;
    if (len < off + 20 + 8 + 12 + 4) return;
    int etype = f[12] << 8 | f[13];
    if (etype == 0x8100) { etype = f[16] << 8 | f[17]; off += 4; }
    if (etype != 0x0800 || f[off] >> 4 != 4) return;
    int ihl = (f[off] & 0x0F) * 4, l4 = off + ihl;
    if (len < l4 + 8 + 12 + 4) return;
    int dport = f[l4 + 2] << 8 | f[l4 + 3];
    if (f[off + 9] != 17 || dport != 4791) return;
    int bth = l4 + 8, op = f[bth], el = ext_len_of(op);
    int64_t pay = len - (bth + 12 + el) - 4 - ((f[bth + 1] >> 4) & 3);
    if (op == 0x81) pay = 0;
    int64_t ext_end = bth + 12 + el < len ? bth + 12 + el : len;
    r[R_KIND] = KIND_ROCE; r[R_L3] = off;
    r[R_SRC_IP] = (int64_t)((uint32_t)f[off + 12] << 24 | (uint32_t)f[off + 13] << 16 | (uint32_t)f[off + 14] << 8 | f[off + 15]);
    r[R_DST_IP] = (int64_t)((uint32_t)f[off + 16] << 24 | (uint32_t)f[off + 17] << 16 | (uint32_t)f[off + 18] << 8 | f[off + 19]);
    r[R_DSCP] = f[off + 1] >> 2; r[R_ECN] = f[off + 1] & 3;
    r[R_SPORT] = f[l4] << 8 | f[l4 + 1]; r[R_OPCODE] = op;
    r[R_BECN] = (f[bth + 4] & 0x40) != 0;
    r[R_DQPN] = f[bth + 5] << 16 | f[bth + 6] << 8 | f[bth + 7];
    r[R_ACKREQ] = (f[bth + 8] & 0x80) != 0;
    r[R_PSN] = f[bth + 9] << 16 | f[bth + 10] << 8 | f[bth + 11];
    r[R_PAYLOAD] = pay > 0 ? pay : 0;
    r[R_EXT_AT] = bth + 12; r[R_EXT_LEN] = ext_end - (bth + 12);
    /* verify_icrc(frame) with l3_offset 14 (what Receiver.on_frame checks) */
    if (len < 14 + 20 + 8 + 12 + 4) return;
    int64_t n = len - 4 - 14;
    uint8_t buf[8 + 16384];
    if (n > 16384) return;
    memset(buf, 0xFF, 8);
    memcpy(buf + 8, f + 14, (size_t)n);
    uint8_t *l3 = buf + 8;
    int64_t hl = (l3[0] & 0x0F) * 4;
    int64_t marks[7] = {1, 8, 10, 11, hl + 6, hl + 7, hl + 8 + 4};
    for (int k = 0; k < 7; k++) {
        if (marks[k] >= n) return;      /* frames.icrc would fail on such a frame: not ok */
        l3[marks[k]] = 0xFF;
    }
    uint32_t c = crc_upd(0, buf, n + 8);
    const uint8_t *ic = f + len - 4;
    r[R_ICRC_OK] = c == ((uint32_t)ic[0] | (uint32_t)ic[1] << 8 | (uint32_t)ic[2] << 16 | (uint32_t)ic[3] << 24);
}

/* PacketSocket.recv_many (names: a packet socket, PACKET_OUTGOING frames left out) or
 * DatagramIO.recv_many (no names): up to ``limit`` frames in at most ``rounds``
 * recvmmsg calls, each classified into ``rec`` (R_WORDS words a frame).  Returns the
 * frames kept, or -errno for an error other than "nothing waiting" / ENETDOWN. */
API int nicc_rx_recv(rx_t *r, int fd, int limit, int rounds, int64_t *rec) {
    int kept = 0;
    if (limit > r->cap) limit = r->cap;
    for (int round = 0; round < rounds; round++) {
        int want = limit - kept;
        if (want <= 0) break;
        for (int i = 0; i < want; i++) {
            struct msghdr *m = &r->h[kept + i].msg_hdr;
            m->msg_name = r->names ? r->name + (size_t)(kept + i) * 32 : NULL;
            m->msg_namelen = r->names ? 32 : 0;
        }
        int got = recvmmsg(fd, r->h + kept, want, MSG_DONTWAIT, NULL);
        if (got < 0) {
            int e = errno;
            if (e == ENETDOWN && r->names) continue;
            if (e == EAGAIN || e == EWOULDBLOCK || e == EINTR) break;
            return -e;
        }
        int w = kept;
        for (int k = 0; k < got; k++) {
            int src = kept + k;
            int64_t len = r->h[src].msg_len;
            if (len > r->slot) len = r->slot;
            if (r->names && r->name[(size_t)src * 32 + 10] == 4) continue;   /* PACKET_OUTGOING */
            if (w != src) memcpy(r->iov[w].iov_base, r->iov[src].iov_base, (size_t)len);
            int64_t *rr = rec + (int64_t)w * R_WORDS;
            rr[R_OFF] = (int64_t)w * r->slot; rr[R_LEN] = len;
            classify(r->iov[w].iov_base, len, rr);
            w++;
        }
        kept = w;
        if (got < want) break;
    }
    return kept;
}

/* ---- the receiver's in-order data frames ----
 * Flow words (host/nic/native.py names them): the flow's key (sender IP, QPN), the
 * source port its reply templates were made for, the RC responder's state (expected
 * PSN, -1 for "take the first one's"; MSN; a NAK sent), whether a frame accepted in this
 * call asked for an ACK (Python ORs it into its own: it sends and clears the ACKs) and
 * the counts accumulated since Python last took them. */
enum {
    F_IP, F_DQPN, F_SPORT, F_EXPECTED, F_MSN, F_ACK_PENDING, F_NAK_SENT, F_POISONED, F_TOUCHED,
    F_PKTS, F_BYTES, F_PAYLOAD, F_MSGS, F_CE, F_CNPS, F_ACKS, F_WORDS
};

/* After nicc_rx_recv: each data frame that qp.Receiver.on_frame would simply accept (a
 * known flow on its known source port, to a local address, a good ICRC when checked,
 * the expected PSN) is accepted here: R_FAST is set and the flow's responder state and
 * counts move on.  A CE-marked one too when ``last_cnp`` is given (one double a flow:
 * the flow's last CNP, -inf for none): dcqcn.NotificationPoint.on_packet's rule at
 * ``now`` (a CNP unless the last one is under ``cnp_interval`` old) counts it in F_CE
 * and, when a CNP is due, in F_CNPS with R_FAST 2 (Python sends the flow's CNP at that
 * frame's place among the replies).  A flow's first frame that is anything else, and
 * every later frame of that flow in the batch, is left to Python (F_POISONED), which
 * takes the flow's state first.  Returns the frames accepted. */
API int nicc_rx_fast(int64_t *rec, int n, int64_t *flows, int nflows, const int64_t *local, int nlocal,
                     int verify, double *last_cnp, double now, double cnp_interval) {
    int fast = 0;
    for (int k = 0; k < nflows; k++) {
        int64_t *c = flows + (int64_t)k * F_WORDS;
        c[F_POISONED] = c[F_TOUCHED] = c[F_ACK_PENDING] = 0;      /* per call: Python ORs it in */
    }
    for (int i = 0; i < n; i++) {
        int64_t *r = rec + (int64_t)i * R_WORDS;
        r[R_FAST] = 0;
        if (r[R_KIND] != KIND_ROCE) continue;
        int64_t op = r[R_OPCODE];
        if (op != 0x06 && op != 0x07 && op != 0x08 && op != 0x0A) continue;
        if (nlocal) {
            int ok = 0;
            for (int k = 0; k < nlocal; k++) ok |= local[k] == r[R_DST_IP];
            if (!ok) continue;
        }
        int64_t *fl = NULL;
        for (int k = 0; k < nflows; k++) {
            int64_t *c = flows + (int64_t)k * F_WORDS;
            if (c[F_IP] == r[R_SRC_IP] && c[F_DQPN] == r[R_DQPN]) { fl = c; break; }
        }
        if (!fl || fl[F_POISONED]) continue;
        if (r[R_SPORT] != fl[F_SPORT] || (verify && !r[R_ICRC_OK]) || (r[R_ECN] == 3 && !last_cnp) ||
            fl[F_EXPECTED] < 0 || r[R_PSN] != fl[F_EXPECTED]) {
            fl[F_POISONED] = 1;
            continue;
        }
        int ends = op == 0x08 || op == 0x0A;
        fl[F_NAK_SENT] = 0;
        fl[F_EXPECTED] = (r[R_PSN] + 1) & PSN_MASK;
        if (ends) { fl[F_MSN] = (fl[F_MSN] + 1) & PSN_MASK; fl[F_MSGS]++; }
        if (r[R_ACKREQ]) fl[F_ACK_PENDING] = 1;
        fl[F_PKTS]++; fl[F_BYTES] += r[R_LEN]; fl[F_PAYLOAD] += r[R_PAYLOAD];
        fl[F_TOUCHED] = 1;
        r[R_FAST] = 1;
        if (r[R_ECN] == 3) {
            double *last = last_cnp + (fl - flows) / F_WORDS;
            fl[F_CE]++;
            if (!(now - *last < cnp_interval)) {
                *last = now;
                fl[F_CNPS]++;
                r[R_FAST] = 2;
            }
        }
        fast++;
    }
    return fast;
}


/* ---- the receiver's replies: a flow's coalesced ACK and its CNPs ----
 * One row per flow (the rows of nicc_rx_fast): the ACK template (qp.Receiver's
 * FrameTemplate of the flow's path: the bytes up to the BTH's DestQP, the CRC of its
 * masked invariant prefix, the padding after the AETH) and the flow's CNP bytes. */
#define RXR_HEAD 64
#define RXR_TAIL 16
#define RXR_CNP 128
typedef struct {
    int cap;
    uint8_t (*head)[RXR_HEAD], (*tail)[RXR_TAIL], (*cnp)[RXR_CNP];
    int32_t *head_len, *tail_len, *cnp_len;
    uint32_t *crc_head;
} rxr_t;

API rxr_t *nicc_rxr_new(int cap) {
    if (!t_ready) crc_init();
    rxr_t *x = calloc(1, sizeof *x);
    if (!x) return NULL;
    x->cap = cap;
    x->head = calloc(cap, RXR_HEAD); x->tail = calloc(cap, RXR_TAIL); x->cnp = calloc(cap, RXR_CNP);
    x->head_len = calloc(cap, sizeof(int32_t)); x->tail_len = calloc(cap, sizeof(int32_t));
    x->cnp_len = calloc(cap, sizeof(int32_t)); x->crc_head = calloc(cap, sizeof(uint32_t));
    if (!x->head || !x->tail || !x->cnp || !x->head_len || !x->tail_len || !x->cnp_len || !x->crc_head) {
        free(x->head); free(x->tail); free(x->cnp); free(x->head_len); free(x->tail_len);
        free(x->cnp_len); free(x->crc_head); free(x); return NULL;
    }
    return x;
}

API void nicc_rxr_free(rxr_t *x) {
    if (!x) return;
    free(x->head); free(x->tail); free(x->cnp); free(x->head_len); free(x->tail_len);
    free(x->cnp_len); free(x->crc_head); free(x);
}

/* Row ``row``'s ACK template and CNP; -1 (nothing changed) when a part does not fit. */
API int nicc_rxr_set(rxr_t *x, int row, const uint8_t *head, int hl, uint32_t crc_head,
                     const uint8_t *tail, int tl, const uint8_t *cnp, int cl) {
    if (row < 0 || row >= x->cap || hl < 0 || hl > RXR_HEAD || tl < 0 || tl > RXR_TAIL ||
        cl < 0 || cl > RXR_CNP)
        return -1;
    memcpy(x->head[row], head, (size_t)hl); x->head_len[row] = hl; x->crc_head[row] = crc_head;
    memcpy(x->tail[row], tail, (size_t)tl); x->tail_len[row] = tl;
    memcpy(x->cnp[row], cnp, (size_t)cl); x->cnp_len[row] = cl;
    return 0;
}

/* After nicc_rx_fast accepted all ``n`` frames of the batch (every R_FAST set), the
 * replies qp.Receiver would give, into the tx arena, in its order: each due CNP at its
 * frame's place (R_FAST 2), then, row by row (the rows are in the Receiver's flow order),
 * each pending ACK as Receiver.flush_acks makes it (AETH ``syndrome``, rc.AETH_ACK, and
 * the flow's MSN; the PSN before the expected one); F_ACK_PENDING is cleared and F_ACKS counts it.  Returns
 * the frames pushed, or -1 (nothing done) when they would not all fit in the arena or a
 * frame is not fast. */
static int rx_row(const int64_t *flows, int nflows, const int64_t *r) {
    for (int k = 0; k < nflows; k++)
        if (flows[(int64_t)k * F_WORDS + F_IP] == r[R_SRC_IP] && flows[(int64_t)k * F_WORDS + F_DQPN] == r[R_DQPN])
            return k;
    return -1;
}

API int nicc_rx_replies(const int64_t *rec, int n, int64_t *flows, int nflows, const rxr_t *x, tx_t *t,
                        int syndrome) {
    int need = 0;
    for (int i = 0; i < n; i++) {
        const int64_t *r = rec + (int64_t)i * R_WORDS;
        if (!r[R_FAST]) return -1;
        if (r[R_FAST] == 2) {
            int row = rx_row(flows, nflows, r);
            if (row < 0 || row >= x->cap || !x->cnp_len[row]) return -1;
            need++;
        }
    }
    if (nflows > x->cap) return -1;
    for (int k = 0; k < nflows; k++) {
        const int64_t *c = flows + (int64_t)k * F_WORDS;
        if (c[F_ACK_PENDING] && c[F_EXPECTED] >= 0) {
            if (!x->head_len[k] || x->head_len[k] + 8 + x->tail_len[k] + 4 > t->slot) return -1;
            need++;
        }
    }
    if (need > t->cap - t->n) return -1;
    int pushed = 0;
    for (int i = 0; i < n; i++) {
        const int64_t *r = rec + (int64_t)i * R_WORDS;
        if (r[R_FAST] != 2) continue;
        int row = rx_row(flows, nflows, r);
        nicc_tx_push(t, x->cnp[row], x->cnp_len[row]);          /* fits: counted above */
        pushed++;
    }
    for (int k = 0; k < nflows; k++) {
        int64_t *c = flows + (int64_t)k * F_WORDS;
        if (!c[F_ACK_PENDING] || c[F_EXPECTED] < 0) continue;
        c[F_ACK_PENDING] = 0;
        c[F_ACKS]++;
        uint8_t *f = t->iov[t->n].iov_base, *p = f;
        memcpy(p, x->head[k], (size_t)x->head_len[k]); p += x->head_len[k];
        be32(p, (uint32_t)((c[F_EXPECTED] - 1) & PSN_MASK));
        uint32_t crc = crc_upd(x->crc_head[k], p, 4); p += 4;
        be32(p, ((uint32_t)(syndrome & 0xFF) << 24) | (uint32_t)(c[F_MSN] & PSN_MASK));   /* AETH */
        crc = crc_upd(crc, p, 4); p += 4;
        memcpy(p, x->tail[k], (size_t)x->tail_len[k]);
        crc = crc_upd(crc, p, x->tail_len[k]); p += x->tail_len[k];
        p[0] = crc; p[1] = crc >> 8; p[2] = crc >> 16; p[3] = crc >> 24; p += 4;
        t->iov[t->n].iov_len = (size_t)(p - f);
        t->n++;
        pushed++;
    }
    return pushed;
}

/* A receiver's burst: wait in ppoll on ``fd`` until ``deadline`` (monotonic s); each
 * batch that arrives is read (nicc_rx_recv), accepted (nicc_rx_fast at the batch's
 * instant; ``seen``: each flow's last instant C accepted a frame of it) and, when
 * accepted whole, answered (nicc_rx_replies) and sent (nicc_tx_flush), without Python:
 * what the Python step does for such a batch.  The first batch not accepted whole stays
 * in ``rec``, already through nicc_rx_fast (its R_FAST, the flows' F_TOUCHED and
 * F_ACK_PENDING as that call left them), for Python's next step.  A signal (EINTR), a
 * wake-up with nothing to read, or an error ends it too.  out: [frames flushed, refused,
 * why: 0 deadline, 1 a batch for Python, 2 a signal, 3 error, errno, frames left in
 * ``rec``, how many of those C accepted, batches answered in C, their replies, their
 * frames].  Returns the batches answered in C. */
API int nicc_rx_burst(rx_t *rx, int fd, int rx_limit, int rounds, int64_t *rec, int64_t *flows, int nflows,
                      const int64_t *local, int nlocal, int verify, double *last_cnp, double cnp_interval,
                      double *seen, const rxr_t *x, tx_t *t, int syndrome, double deadline, int64_t *out) {
    int64_t flushed = 0, refused = 0, batches = 0, replies = 0, frames = 0;
    int why = 0, err = 0, left = 0, left_fast = 0;
    for (;;) {
        double now = mono_s();
        if (now >= deadline) { why = 0; break; }
        struct pollfd pfd = {fd, POLLIN, 0};
        double w = deadline - now;
        struct timespec ts = {(time_t)w, (long)((w - (double)(time_t)w) * 1e9)};
        int rc = ppoll(&pfd, 1, &ts, NULL);
        if (rc < 0) {
            if (errno == EINTR) { why = 2; break; }
            err = errno; why = 3; break;
        }
        if (rc == 0) continue;
        int got = nicc_rx_recv(rx, fd, rx_limit, rounds, rec);
        if (got < 0) { err = -got; why = 3; break; }
        if (got == 0) { why = 1; break; }       /* nothing to read: Python's step says why */
        now = mono_s();
        int fast = nicc_rx_fast(rec, got, flows, nflows, local, nlocal, verify, last_cnp, now, cnp_interval);
        for (int k = 0; k < nflows; k++)
            if (flows[(int64_t)k * F_WORDS + F_TOUCHED]) seen[k] = now;
        int made = fast == got ? nicc_rx_replies(rec, got, flows, nflows, x, t, syndrome) : -1;
        if (made < 0) { left = got; left_fast = fast; why = 1; break; }
        batches++; replies += made; frames += got;
        if (t->n) {
            int n0 = t->n;
            int64_t r = 0;
            err = nicc_tx_flush(t, fd, &r);
            flushed += n0; refused += r;
            if (err) { why = 3; break; }
        }
    }
    out[0] = flushed; out[1] = refused; out[2] = why; out[3] = err; out[4] = left; out[5] = left_fast;
    out[6] = batches; out[7] = replies; out[8] = frames;
    return (int)batches;
}

/* ---- a sender's replies and its burst ---- */
#define PSN_HALF (1 << 23)

static int64_t psn_diff(int64_t a, int64_t b) {
    int64_t d = (a - b) & PSN_MASK;
    return d >= PSN_HALF ? d - (1 << 24) : d;
}

/* One received frame (its record ``r``, its bytes ``f``) for sender QP ``s``: 1 when it
 * was taken here at ``now`` (a CNP, or an ACK of AETH type ACK, from the QP's peer to its
 * QPN: SenderQP.on_frame's effect on the requester, the MSN and DCQCN; the counts go to
 * the S_OUT_ words), 0 when it is not this QP's, -1 when it is this QP's but Python's
 * (a NAK, another opcode). */
static int qp_reply(int64_t *s, double *d, double *rp, const int64_t *r, const uint8_t *f, double now) {
    if (r[R_KIND] != KIND_ROCE || r[R_DQPN] != s[S_SQPN] || r[R_SRC_IP] != s[S_PEER_IP]) return 0;
    int64_t op = r[R_OPCODE];
    if (op == 0x81) {
        s[S_OUT_CNPS]++;
        if (s[S_REACT]) rp_on_cnp(rp, s, now);
    } else if (op == 0x11 && r[R_EXT_LEN] == 4) {
        const uint8_t *aeth = f + r[R_EXT_AT];
        if (aeth[0] >> 5 != 0) return -1;                          /* NAK (or RNR): Python's */
        int64_t acked = s[S_ACKED];
        int64_t seq = acked + psn_diff(r[R_PSN], (s[S_START_PSN] + acked) & PSN_MASK);
        if (acked <= seq && seq < s[S_HIGH]) {                    /* Requester.on_ack / _progress */
            s[S_ACKED] = seq + 1;
            if (s[S_NEXT] < seq + 1) s[S_NEXT] = seq + 1;
            s[S_OUT_PROGRESS] = 1;
        }
        int64_t msn = (int64_t)aeth[1] << 16 | (int64_t)aeth[2] << 8 | aeth[3];
        int64_t delta = (msn - s[S_ACKED_MSN]) & PSN_MASK;       /* SenderQP._on_msn */
        if (0 < delta && delta < PSN_HALF) {
            s[S_ACKED_MSN] = msn;
            s[S_OUT_ACKED_MSGS] += delta;
        }
    } else {
        return -1;
    }
    if (!s[S_OUT_RX]) d[D_RX_FIRST_T] = now;
    d[D_RX_LAST_T] = now;
    s[S_OUT_RX]++;
    return 1;
}

/* A QP's frames at ``now`` in a burst, as SenderQP.poll_into makes them at that instant:
 * DCQCN advanced first, then fills of at most ``limit`` frames in all, each followed by
 * the byte counter (ReactionPoint.on_sent), so a rate change at a round's end applies to
 * the next frame.  Returns the frames made; *python is set when a source-port move waits
 * at the message end it stopped at. */
static int qp_frames(tx_t *t, const tpl_t *tp, int64_t *s, double *d, double *rp, int64_t *acks, double *ackt,
                     int limit, double now, int *python) {
    if (s[S_TOTAL] >= 0 && s[S_NEXT] >= s[S_TOTAL]) return 0;
    if (!(s[S_NEXT] - s[S_ACKED] < s[S_WINDOW])) return 0;
    rp_advance(rp, s, now);
    d[D_NOW] = now;
    int made = 0;
    while (made < limit) {
        s[S_BC_LEFT] = isinf(rp[RP_NEXT_RATE]) ? -1 : s[S_RP_BC_PKTS] - s[S_RP_PKTS];
        d[D_GAP] = 1.0 / rp[RP_RATE];
        int want = limit - made;
        int k = fill_core(t, tp, s, d, acks, ackt, want, 1);
        if (k == 0) break;
        made += k;
        rp_on_sent(rp, s, now, k);
        if (s[S_OUT_AGAIN] && s[S_STOP_AT_END] && s[S_OUT_LAST_END]) { *python = 1; break; }
        if (k < want && !s[S_OUT_AGAIN]) break;
    }
    return made;
}

/* One instant of a burst for tests (against SenderQP.on_frame and poll_batch at the same
 * ``now``): the records ``rec[0..n)`` (frames at ``buf`` + R_OFF) taken in order while
 * they are this QP's replies, then its frames.  out: [replies taken, frames made,
 * python (1: a frame or a port move is Python's)]. */
API void nicc_qp_instant(tx_t *t, const tpl_t *tp, int64_t *s, double *d, double *rp, int64_t *acks, double *ackt,
                         const int64_t *rec, const uint8_t *buf, int n, int limit, double now, int64_t *out) {
    int taken = 0, python = 0;
    for (; taken < n; taken++) {
        const int64_t *r = rec + (int64_t)taken * R_WORDS;
        if (qp_reply(s, d, rp, r, buf + r[R_OFF], now) != 1) { python = 1; break; }
    }
    int made = python ? 0 : qp_frames(t, tp, s, d, rp, acks, ackt, limit, now, &python);
    out[0] = taken; out[1] = made; out[2] = python;
}

/* The sender's wait-and-send loop between two Python steps (NicPort.run on the native
 * path): until ``deadline`` (Python's next control instant: a retry timer, a pause's
 * end, the burst's length, the run's end), at each wake-up (monotonic time ``now``):
 *   - the frames that arrived are read into ``rx`` (recvmmsg, as nicc_rx_recv) and taken
 *     in order while each is an ACK or CNP of a QP taking part (qp_reply); the first
 *     that is not (a NAK, a PAUSE, another QP's, anything else) ends the burst, and it and
 *     the frames after it stay in ``rec`` for Python (out[4] of them, compacted to the
 *     front);
 *   - each QP whose S_SKIP is 0 sends what its pacer lets leave (qp_frames), DCQCN's
 *     timers and byte counter run on ``rps``;
 *   - one sendmmsg, then ppoll on ``fd`` until the next frame is due or one arrives.
 * It also returns to Python when a source-port move waits, when a QP's ACK-request log is
 * nearly full, or when no QP can send (window closed, count reached).  The QPs' out words
 * accumulate over the burst (S_OUT_ACKREQS indexes ``acks``/``ackt``; D_FIRST_T and
 * D_LAST_T the first and last instant it sent, D_RX_FIRST_T and D_RX_LAST_T the replies').
 * out: [frames flushed, refused, why: 0 deadline, 1 a frame for Python, 2 Python's
 * control, 3 nothing to send, 4 error, errno, frames left in ``rec`` for Python,
 * replies taken].  Returns the frames made. */
API int64_t nicc_burst(tx_t *t, int fd, int nqp, tpl_t **tps, int64_t **ss, double **ds, double **rps,
                       int64_t **acks, double **ackt, int ack_cap, int tx_burst, rx_t *rx, int64_t *rec,
                       int rx_limit, double deadline, int64_t *out) {
    int64_t made = 0, flushed = 0, refused = 0, taken_all = 0;
    int why = 0, err = 0, arrived = 0, left = 0;
    for (;;) {
        double now = mono_s();
        if (now >= deadline) { why = 0; break; }
        if (arrived) {
            arrived = 0;
            int got = nicc_rx_recv(rx, fd, rx_limit, 1, rec);
            /* an error, or a wake-up with nothing to read (a socket error pending, ENETDOWN):
             * Python's step reads it again and says, as before; no spinning in ppoll here */
            if (got <= 0) { why = 1; break; }
            int i = 0;
            for (; i < got; i++) {
                int64_t *r = rec + (int64_t)i * R_WORDS;
                int took = 0;
                for (int q = 0; q < nqp && !took; q++) {
                    int res = ss[q][S_SKIP] ? (r[R_KIND] == KIND_ROCE && r[R_DQPN] == ss[q][S_SQPN] ? -1 : 0)
                                            : qp_reply(ss[q], ds[q], rps[q], r, rx->buf + r[R_OFF], now);
                    if (res < 0) break;
                    took = res;
                }
                if (!took) break;
            }
            taken_all += i;
            if (i < got) {
                left = got - i;
                memmove(rec, rec + (int64_t)i * R_WORDS, (size_t)left * R_WORDS * sizeof *rec);
                why = 1;
                break;
            }
        }
        int stop = 0;
        for (int q = 0; q < nqp; q++) {
            int64_t *s = ss[q];
            double *d = ds[q];
            if (s[S_SKIP]) continue;
            if (s[S_RATE_LIMIT] && now < d[D_NEXT_AT]) continue;
            if (s[S_OUT_ACKREQS] + tx_burst > ack_cap) { stop = 1; continue; }
            if (t->n + tx_burst > t->cap) {
                int n0 = t->n;
                int64_t r = 0;
                err = nicc_tx_flush(t, fd, &r);
                flushed += n0; refused += r;
                if (err) break;
            }
            int python = 0;
            made += qp_frames(t, tps[q], s, d, rps[q], acks[q], ackt[q], tx_burst, now, &python);
            if (python) stop = 1;
        }
        if (!err && t->n) {
            int n0 = t->n;
            int64_t r = 0;
            err = nicc_tx_flush(t, fd, &r);
            flushed += n0; refused += r;
        }
        if (err) { why = 4; break; }
        if (stop) { why = 2; break; }
        double wake = deadline;
        int can = 0;
        for (int q = 0; q < nqp; q++) {
            int64_t *s = ss[q];
            if (s[S_SKIP]) continue;
            if (s[S_TOTAL] >= 0 && s[S_NEXT] >= s[S_TOTAL]) continue;
            if (!(s[S_NEXT] - s[S_ACKED] < s[S_WINDOW])) continue;
            if (!s[S_RATE_LIMIT]) { stop = 1; break; }      /* unpaced: Python steps at once */
            can = 1;
            if (ds[q][D_NEXT_AT] < wake) wake = ds[q][D_NEXT_AT];
        }
        if (stop) { why = 2; break; }
        if (!can) { why = 3; break; }
        now = mono_s();
        struct pollfd pfd = {fd, POLLIN, 0};
        int rc;
        if (wake > now) {
            double w = wake - now;
            struct timespec ts = {(time_t)w, (long)((w - (double)(time_t)w) * 1e9)};
            rc = ppoll(&pfd, 1, &ts, NULL);
            if (rc < 0 && errno == EINTR) { why = 1; break; }     /* a signal: Python's turn */
        } else {
            rc = poll(&pfd, 1, 0);
        }
        if (rc > 0) arrived = 1;
    }
    out[0] = flushed; out[1] = refused; out[2] = why; out[3] = err; out[4] = left; out[5] = taken_all;
    return made;
}
