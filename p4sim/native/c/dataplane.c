/* p4sim switch process, native data plane: the ports, the ingress buffer, the traffic
 * manager and the pipeline worker of p4sim/switchd (device.py, ports.py, ingress.py,
 * tm.py) in C, so that no Python runs per packet when the program runs natively.
 *
 *   rx thread      epoll on every port (and a capture timer); ring or recvmmsg() batches (802.1Q tags put back from
 *                  PACKET_AUXDATA, own transmissions skipped); PFC frames to the MAC
 *                  (tm pause) when PFC is on; the rest into the ingress buffer (1024
 *                  frames, BMv2's): when it is full the thread stops reading and the
 *                  kernel drops (counted by PACKET_STATISTICS, read by Python).
 *   worker thread  as SwitchDevice._worker_loop: first every packet the traffic manager
 *                  lets leave now (egress pass, frames to the tx queue), then one frame
 *                  from the ingress buffer (ingress pass, work into the queues), else
 *                  sleep until a frame arrives or a departure time comes (poll on an
 *                  eventfd and a timerfd: the rx thread moves the timer earlier for a
 *                  new departure instead of waking it). Every pipeline
 *                  pass holds `pipe_mu`, which the control plane takes (device.lock).
 *   tx thread      sendmmsg() batches per port (MSG_DONTWAIT; a frame the kernel refuses
 *                  is a tx_error, as in ports.py).
 *
 * The traffic manager is tm.py's: per port x priority FIFO, strict priority, tail drop at
 * depth, departure time max(now, last + 1/rate) fixed at enqueue, enq_qdepth = packets of
 * the port before the push, deq_qdepth after the pop, PFC pause per priority for quanta x
 * 512 bit times at the port's line rate (0 resumes; a paused queue keeps its packets),
 * and tm.py's PFC watchdog (wd_watch: a queue paused for the detection time with packets
 * waiting is in a storm, PFC ignored on it and, action drop, its packets discarded; no
 * PAUSE for the restoration time restores it; pfc.PfcWatchdog has the settings).
 * The pipeline is reached through function pointers (dp_pipe): the program's native code,
 * or Python callbacks for a program that runs on the Python engine.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <linux/if_packet.h>

#define DP_EXPORT __attribute__((visibility("default")))
#define MAXPORT 512
#define MAXPRIO 32
#define RXB 32
#define SLOT 65540
#define TXB 64
#define WB 32
#define RING_FRAME 2048
#define RING_BLOCK (1 << 16)
#define RING_BLOCKS 32   /* 1,024 slots, 2 MiB: libpcap's default ring, as BMv2's ports (rxring.py BLOCKS) */
#define HOLE_LOOKAHEAD 16
#define HOLE_WAIT_US 5000
#define PFC_OPCODE 0x0101
#define PCAP_FLUSH_US 5000    /* a capture record reaches its file at most this long after the frame */
#define PCAP_FLUSH_BYTES (1 << 16)
#define TFD_TAG ((uint64_t)MAXPORT + 2)   /* the capture timer's tag in the epoll set */

/* One capture file (pcap.py's format, its header written by Python). A record is written
 * at once when the file had none for PCAP_FLUSH_US; otherwise it waits in buf, in order,
 * and the rx thread writes buf (pcap_due) at a wake-up 4/5 of PCAP_FLUSH_US or more after
 * the last write, or when its timerfd fires at the last write + PCAP_FLUSH_US (a writer
 * when buf holds PCAP_FLUSH_BYTES), so a busy port costs one write() per ~4 ms per file
 * instead of one per frame. dp_stop and dp_set_capture write what is left. */
typedef struct pcapbuf {
    pthread_mutex_t mu; int fd; int wake_fd;
    uint8_t *buf; size_t n, cap; int64_t last_write_us;
} pcapbuf;

typedef struct p4nout {
    int64_t n, cap; int64_t *port, *off, *len, *src;
    uint8_t *buf; int64_t used, bufcap;
} p4nout;

typedef struct dp_pipe {
    void *sw;
    int (*run_ingress)(void *sw, int64_t port, const uint8_t *data, int64_t len);
    int (*run_egress)(void *sw, void *item, int qmeta_set, int64_t enq_ts, int64_t enq_qdepth, int64_t deq_qdepth);
    void *(*work)(void *sw, int i);
    int (*nwork)(void *sw);
    void (*item_info)(void *item, int64_t *out);
    void (*item_free)(void *sw, void *item);
    p4nout *(*out)(void *sw);
    /* optional (NULL: run_ingress / run_egress): the pass with the clock read by the data
       plane; ingress_at takes the frame's malloc'd buffer (the pipeline frees it) */
    int (*ingress_at)(void *sw, int64_t now_us, int64_t port, uint8_t *data, int64_t len);
    int (*egress_at)(void *sw, int64_t now_us, void *item, int qmeta_set, int64_t enq_ts, int64_t enq_qdepth, int64_t deq_qdepth);
} dp_pipe;

typedef struct qent { void *item; double depart; uint64_t seq; int64_t enq_ts, enq_qdepth; struct qent *next; } qent;
/* frames one worker batch made, in order, handed to the tx thread whole (len -1: not sent) */
typedef struct txb {
    struct txb *next;
    int n, cap; int64_t *port, *off, *len;
    uint8_t *buf; int64_t used, bufcap;
} txb;
typedef struct dpq {
    qent *head, *tail; int64_t n;
    int64_t depth_pkts; double rate_pps; double last_depart;
    int paused; double pause_start, paused_until;
    int64_t enqueued, dequeued, dropped, pause_frames; double paused_us;
    int wd_storm; double wd_quiet_from;   /* PFC watchdog: in a storm, since when no PAUSE came */
    double wait_from;                     /* since when packets wait (the queue non-empty) */
    int64_t wd_storms, wd_restored, wd_dropped;
} dpq;
typedef struct dpport {
    int exists; int64_t count; double line_rate_gbps; int pfc_enabled;
    dpq q[MAXPRIO];
    /* socket side */
    int fd; int is_port; int need_reopen; int down; int64_t skip_until_us;
    int gen;                              /* bumped when fd is set: the epoll registration is redone */
    int ep_fd, ep_gen;                    /* the fd registered in the rx thread's epoll set (-1 none), for gen */
    /* PACKET_RX_RING (TPACKET_V2), as rxring.py: NULL when the kernel refused one */
    uint8_t *ring; size_t ring_bytes; int slots, next; int64_t hole_since_us; int64_t truncated, holes;
    pcapbuf cap_in, cap_out;              /* pcap files (fd -1: none) */
    int64_t rx_frames, rx_bytes, tx_frames, tx_bytes, tx_errors, rx_errors;
    int max_frame; int64_t rx_oversize;   /* the interface's MTU + 14 (0: no limit); giants dropped */
} dpport;

/* a frame longer than the port takes (its MTU + the Ethernet header, + 4 with an 802.1Q
 * or 802.1ad tag), as a switch's MAC drops giants: counted, never seen by the pipeline
 * (ports.py's RawSocketPort.oversize) */
static inline int oversize(const dpport *p, const uint8_t *f, int64_t len)
{
    if (p->max_frame <= 0 || len <= p->max_frame) return 0;
    int tagged = len >= 14 && ((f[12] == 0x81 && f[13] == 0x00) || (f[12] == 0x88 && f[13] == 0xa8));
    return len > p->max_frame + (tagged ? 4 : 0);
}

typedef struct rxframe { int64_t port; uint8_t *data; int64_t len; } rxframe;

typedef void (*dp_packet_in_fn)(const uint8_t *data, int64_t len);
typedef int64_t (*dp_clock_fn)(void);

typedef struct dp {
    pthread_mutex_t pipe_mu;              /* a pipeline pass, or the control plane */
    pthread_mutex_t mu;                   /* queues, ingress buffer, tx queues, settings */
    pthread_mutex_t tx_mu;                /* held by whichever thread sends batches: one at a time, in order */
    pthread_mutex_t cpu_mu;               /* held by whichever thread delivers packet-ins: in order */
    pthread_cond_t work_cv, room_cv;
    pthread_cond_t reopen_cv;             /* a port's socket failed (dp_wait_reopen), or stop */
    int efd_rx, efd_tx;
    int ep;                               /* the rx thread's epoll set: efd_rx, tfd and the ports it reads */
    int tfd; int64_t tfd_at;              /* the rx thread's capture timer (timerfd) and when it is armed for (-1: not) */
    int stop; int started;
    pthread_t rx_th, wk_th, tx_th;
    int64_t clock_start_ns; dp_clock_fn clock_cb;
    int prio_queues; int64_t def_depth; double def_rate; double def_line; int def_pfc; int passthrough;
    int64_t cpu_port;
    double wd_detect_us, wd_restore_us; int wd_drop;   /* PFC watchdog (detect 0: off) */
    dpport *ports[MAXPORT]; int port_order[MAXPORT]; int nport_order;
    int64_t queued; uint64_t seq;
    /* ingress buffer */
    rxframe *ib; int64_t ib_cap, ib_head, ib_n, ib_room_to_wake; int producers_waiting;
    int64_t ib_enq, ib_deq, ib_dropped, ib_full_waits, ib_high;
    /* statistics (SwitchDevice.stats) */
    int64_t st_no_program, st_no_port, st_tm_drops, st_pfc_frames, st_packet_in, st_errors;
    int64_t st_rx_batches, st_inline_sends, st_tx_wakeups;   /* batches the rx thread ran, sends without the tx thread, its wake-ups */
    int64_t st_wk_wakeups, st_wk_empty;   /* the worker's waits that ended, and those after which it found nothing to do */
    int tx_pending;
    int wk_idle;                          /* the worker is waiting for work (rx may run the pipeline) */
    double wk_wake_at;                    /* while wk_idle: the dp time (us) its wait ends by itself */
    int efd_wk, tfd_wk;                   /* the worker waits on these (-1: on work_cv): woken by efd_wk, its departure
                                             timer tfd_wk, which the rx thread may move earlier without waking it */
    int wk_kicked;                        /* efd_wk written since the worker last woke */
    txb *tx_head, *tx_tail, *tx_free; int64_t tx_queued;   /* batches for the tx thread, frames in them */
    qent *qfree;                                          /* queue entries to reuse */
    qent *wd_dead;      /* packets the watchdog dropped (drop), freed under pipe_mu: wd_reap */
    dp_pipe pipe; int has_pipe;
    dp_packet_in_fn packet_in;
    uint8_t **cpu_frames; int64_t *cpu_len; int ncpu, capcpu;
} dp;

static int64_t dp_now(dp *d)
{
    if (d->clock_cb) return d->clock_cb();
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t ns = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec - d->clock_start_ns;
    return ns >= 0 ? ns / 1000 : -((-ns + 999) / 1000);
}

static dpport *port_get(dp *d, int no)
{
    if (no < 0 || no >= MAXPORT) return NULL;
    dpport *p = d->ports[no];
    if (!p) {
        p = (dpport *)calloc(1, sizeof(dpport));
        if (!p) abort();
        p->fd = -1; p->ep_fd = -1;
        pcapbuf *cb[2] = { &p->cap_in, &p->cap_out };
        for (int i = 0; i < 2; i++) { pthread_mutex_init(&cb[i]->mu, NULL); cb[i]->fd = -1; cb[i]->wake_fd = d->efd_rx; cb[i]->last_write_us = INT64_MIN / 2; }
        p->line_rate_gbps = d->def_line; p->pfc_enabled = d->def_pfc;
        for (int i = 0; i < MAXPRIO; i++) { p->q[i].depth_pkts = d->def_depth; p->q[i].rate_pps = d->def_rate; p->q[i].last_depart = -1e300; }
        d->ports[no] = p;
        d->port_order[d->nport_order++] = no;
    }
    p->exists = 1;
    return p;
}

/* ------------------------------------------------------------------ traffic manager */
static void q_settle(dpq *q, double now)
{
    if (q->paused && now >= q->paused_until) { q->paused_us += q->paused_until - q->pause_start; q->paused = 0; }
}
static void q_resume(dpq *q, double now)
{
    q_settle(q, now);
    if (q->paused) { double x = now - q->pause_start; q->paused_us += x > 0 ? x : 0; q->paused = 0; }
}

static void wake_worker(dp *d);

/* tm._Queue.stuck_from_us: paused with packets waiting since the later of the pause's
 * start and the first waiting packet's arrival (nothing leaves a paused queue) */
static double q_stuck_from(const dpq *q)
{
    return q->pause_start > q->wait_from ? q->pause_start : q->wait_from;
}

/* tm._watch: the PFC watchdog's step for one queue at now (mu held) */
static void wd_watch(dp *d, dpport *p, dpq *q, double now)
{
    if (d->wd_detect_us <= 0) return;
    if (q->wd_storm) {
        if (now - q->wd_quiet_from >= d->wd_restore_us) { q->wd_storm = 0; q->wd_restored++; }
        return;
    }
    q_settle(q, now);
    if (!(q->paused && q->n && now - q_stuck_from(q) >= d->wd_detect_us)) return;
    q->wd_storm = 1; q->wd_quiet_from = now; q->wd_storms++;
    q_resume(q, now);
    if (d->wd_drop && q->head) {
        /* not item_free here: the caller may hold only mu (an rx thread's PAUSE, the
         * control thread's queue_stats) while a pass, under pipe_mu alone, takes items from
         * the same free list; the entries wait on wd_dead for wd_reap (pipe_mu and mu held) */
        q->tail->next = d->wd_dead; d->wd_dead = q->head;
        q->head = q->tail = NULL;
        p->count -= q->n; d->queued -= q->n; q->wd_dropped += q->n; q->n = 0;
    }
}

/* tm.enqueue: returns enq_qdepth, -1 when dropped (called with mu held) */
static int64_t tm_enqueue(dp *d, int64_t port, int64_t prio, void *item, int64_t now)
{
    dpport *p = port_get(d, (int)port);
    if (!p) return -1;
    if (prio < 0 || prio >= d->prio_queues) { p->q[0].dropped++; return -1; }
    dpq *q = &p->q[prio];
    if (q->wd_storm) {
        wd_watch(d, p, q, (double)now);
        if (q->wd_storm && d->wd_detect_us > 0 && d->wd_drop) { q->wd_dropped++; return -1; }
    }
    if (q->n >= q->depth_pkts) { q->dropped++; return -1; }
    double depart = (double)now;
    if (q->rate_pps > 0) { double t = q->last_depart + 1e6 / q->rate_pps; if (t > depart) depart = t; }
    q->last_depart = depart;
    qent *e = d->qfree;
    if (e) d->qfree = e->next;
    else { e = (qent *)malloc(sizeof(qent)); if (!e) abort(); }
    e->item = item; e->depart = depart; e->seq = d->seq++; e->enq_ts = now; e->enq_qdepth = p->count; e->next = NULL;
    if (!q->n) q->wait_from = (double)now;
    if (q->tail) q->tail->next = e; else q->head = e;
    q->tail = e; q->n++;
    p->count++; d->queued++; q->enqueued++;
    return e->enq_qdepth;
}

typedef struct deq { int64_t port, prio; void *item; int64_t enq_ts, enq_qdepth, deq_qdepth; } deq;

/* tm._pick: 1 and *out when a packet may leave at now; *wake = next time or -1 */
static int tm_pick(dp *d, double now, deq *out, double *wake)
{
    *wake = -1;
    if (!d->queued) return 0;
    qent *best = NULL; int bport = -1, bprio = -1;
    for (int k = 0; k < d->nport_order; k++) {
        int no = d->port_order[k];
        dpport *p = d->ports[no];
        if (!p || !p->count) continue;
        for (int prio = d->prio_queues - 1; prio >= 0; prio--) {
            dpq *q = &p->q[prio];
            if (!q->n) continue;
            if (q->paused) q_settle(q, now);
            if (q->paused && d->wd_detect_us > 0) { wd_watch(d, p, q, now); if (!q->n) continue; }
            if (q->paused) {
                double until = q->paused_until;   /* the watchdog looks again at the detection time */
                if (d->wd_detect_us > 0 && q_stuck_from(q) + d->wd_detect_us < until) until = q_stuck_from(q) + d->wd_detect_us;
                if (*wake < 0 || until < *wake) *wake = until;
                continue;
            }
            qent *h = q->head;
            if (h->depart <= now) {
                if (!best || h->depart < best->depart || (h->depart == best->depart && h->seq < best->seq)) { best = h; bport = no; bprio = prio; }
                break;
            }
            if (*wake < 0 || h->depart < *wake) *wake = h->depart;
        }
    }
    if (!best) return 0;
    dpport *p = d->ports[bport];
    dpq *q = &p->q[bprio];
    q->head = best->next; if (!q->head) q->tail = NULL;
    q->n--; p->count--; d->queued--; q->dequeued++;
    out->port = bport; out->prio = bprio; out->item = best->item; out->enq_ts = best->enq_ts;
    out->enq_qdepth = best->enq_qdepth; out->deq_qdepth = p->count;
    best->next = d->qfree; d->qfree = best;
    return 1;
}

/* the packets the watchdog dropped, their items freed (call with pipe_mu and mu held,
 * or before the threads run / after they stopped) */
static void wd_reap(dp *d)
{
    qent *e = d->wd_dead;
    while (e) {
        qent *nx = e->next;
        if (d->has_pipe) d->pipe.item_free(d->pipe.sw, e->item);
        e->next = d->qfree; d->qfree = e; e = nx;
    }
    d->wd_dead = NULL;
}

static int64_t tm_flush(dp *d)
{
    int64_t n = 0;
    wd_reap(d);
    for (int k = 0; k < d->nport_order; k++) {
        dpport *p = d->ports[d->port_order[k]];
        for (int i = 0; i < MAXPRIO; i++) {
            qent *e = p->q[i].head;
            while (e) {
                qent *nx = e->next;
                if (d->has_pipe) d->pipe.item_free(d->pipe.sw, e->item);
                free(e); e = nx; n++;
            }
            p->q[i].head = p->q[i].tail = NULL; p->q[i].n = 0;
        }
        p->count = 0;
    }
    d->queued = 0;
    return n;
}

/* a received PFC frame (pfc.parse_pfc + SwitchDevice._pfc_consumed); 1 when consumed */
static int mac_pfc(dp *d, int64_t port, const uint8_t *f, int64_t len)
{
    static const uint8_t dst[6] = {0x01, 0x80, 0xc2, 0x00, 0x00, 0x01};
    if (len < 6 || memcmp(f, dst, 6)) return 0;
    dpport *p = port_get(d, (int)port);
    if (!p || !p->pfc_enabled) return 0;
    if (len < 14 + 20 - 2 + 2) return 0;
    int et = (f[12] << 8) | f[13], op = (f[14] << 8) | f[15], vec = (f[16] << 8) | f[17];
    if (et != 0x8808 || op != PFC_OPCODE) return 0;
    d->st_pfc_frames++;
    double now = (double)dp_now(d);
    for (int prio = 0; prio < 8; prio++) {
        if (!(vec >> prio & 1)) continue;
        int quanta = (f[18 + 2 * prio] << 8) | f[19 + 2 * prio];
        if (prio >= d->prio_queues) continue;
        dpq *q = &p->q[prio];
        q->pause_frames++;
        wd_watch(d, p, q, now);
        if (q->wd_storm) { if (quanta) q->wd_quiet_from = now; continue; }   /* the watchdog ignores PFC on it */
        if (quanta == 0) { q_resume(q, now); continue; }
        q_settle(q, now);
        if (!q->paused) { q->paused = 1; q->pause_start = now; }
        q->paused_until = now + quanta * 512.0 / (p->line_rate_gbps * 1e3);
    }
    wake_worker(d);
    return !d->passthrough;
}

/* ------------------------------------------------------------------ ingress buffer */
static int64_t ib_room(dp *d) { return d->ib_cap - d->ib_n; }
static void ib_push(dp *d, int64_t port, uint8_t *data, int64_t len)
{
    rxframe *r = &d->ib[(d->ib_head + d->ib_n) % d->ib_cap];
    r->port = port; r->data = data; r->len = len;
    d->ib_n++; d->ib_enq++;
    if (d->ib_n > d->ib_high) d->ib_high = d->ib_n;
}



/* ------------------------------------------------------------------ pcap (pcap.py's records) */
static __thread int dp_on_rx_thread;   /* the rx thread writes due captures before it sleeps */
static int64_t mono_us(void) { struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000; }
static void pcap_flush_locked(pcapbuf *c, int64_t now)
{
    size_t off = 0;
    while (off < c->n && c->fd >= 0) {
        ssize_t w = write(c->fd, c->buf + off, c->n - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;                 /* as writev's errors before: the records are lost */
        off += (size_t)w;
    }
    c->n = 0; c->last_write_us = now;
}
static void pcap_write(pcapbuf *c, const uint8_t *f, int64_t len)
{
    if (c->fd < 0) return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
    uint32_t incl = (uint32_t)(len < 65535 ? len : 65535);
    uint32_t hdr[4] = { (uint32_t)(us / 1000000), (uint32_t)(us % 1000000), incl, (uint32_t)len };
    int64_t now = mono_us();
    int wake = 0;
    pthread_mutex_lock(&c->mu);
    if (c->fd < 0) { pthread_mutex_unlock(&c->mu); return; }
    if (!c->n && now - c->last_write_us >= PCAP_FLUSH_US) {
        struct iovec v[2] = { { hdr, sizeof hdr }, { (void *)f, incl } };
        ssize_t r = writev(c->fd, v, 2); (void)r;
        c->last_write_us = now;
        pthread_mutex_unlock(&c->mu);
        return;
    }
    if (c->n + sizeof hdr + incl > c->cap) {
        size_t cap = c->cap ? c->cap : 4096;
        while (cap < c->n + sizeof hdr + incl) cap *= 2;
        uint8_t *b = (uint8_t *)realloc(c->buf, cap);
        if (!b) abort();
        c->buf = b; c->cap = cap;
    }
    wake = !c->n && !dp_on_rx_thread;
    memcpy(c->buf + c->n, hdr, sizeof hdr); memcpy(c->buf + c->n + sizeof hdr, f, incl);
    c->n += sizeof hdr + incl;
    if (c->n >= PCAP_FLUSH_BYTES) { pcap_flush_locked(c, now); wake = 0; }
    int wfd = c->wake_fd;
    pthread_mutex_unlock(&c->mu);
    if (wake) { uint64_t one = 1; ssize_t r = write(wfd, &one, 8); (void)r; }   /* the rx thread sets its timer */
}
/* the captures of ports[0..n) whose wait is over written; returns when the next is due
 * (monotonic µs, the last write + PCAP_FLUSH_US), -1 none.
 * A buffer is written once 4/5 of PCAP_FLUSH_US have passed since its last write, so
 * that while frames keep coming a frame's wake-up writes it before its deadline and the
 * rx thread's timer (set to the deadline) is moved on instead of firing. */
static int64_t pcap_due(dpport *const *ports, int n)
{
    int64_t now = mono_us(), next = -1;
    for (int k = 0; k < n; k++) {
        pcapbuf *cb[2] = { &ports[k]->cap_in, &ports[k]->cap_out };
        for (int i = 0; i < 2; i++) {
            pcapbuf *c = cb[i];
            if (!c->n) continue;                 /* read unlocked: a writer that fills it wakes us */
            pthread_mutex_lock(&c->mu);
            if (c->n) {
                int64_t left = c->last_write_us + PCAP_FLUSH_US - now;
                if (left <= PCAP_FLUSH_US / 5) pcap_flush_locked(c, now);
                else if (next < 0 || c->last_write_us + PCAP_FLUSH_US < next) next = c->last_write_us + PCAP_FLUSH_US;
            }
            pthread_mutex_unlock(&c->mu);
        }
    }
    return next;
}
static void pcap_set(pcapbuf *c, int fd)
{
    pthread_mutex_lock(&c->mu);
    pcap_flush_locked(c, mono_us());
    c->fd = fd;
    pthread_mutex_unlock(&c->mu);
}

/* ------------------------------------------------------------------ receive ring */
static void ring_close(dpport *p)
{
    if (p->ring) munmap(p->ring, p->ring_bytes);
    p->ring = NULL; p->ring_bytes = 0; p->slots = p->next = 0;
}
static void ring_open(dpport *p)
{
    ring_close(p);
    if (p->fd < 0) return;
    int v = TPACKET_V2, one = 1;
    struct tpacket_req req = { RING_BLOCK, RING_BLOCKS, RING_FRAME, RING_BLOCKS * RING_BLOCK / RING_FRAME };
    if (setsockopt(p->fd, SOL_PACKET, PACKET_VERSION, &v, sizeof v) < 0) return;
    if (setsockopt(p->fd, SOL_PACKET, PACKET_COPY_THRESH, &one, sizeof one) < 0) return;
    if (setsockopt(p->fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof req) < 0) return;
    void *m = mmap(NULL, (size_t)RING_BLOCKS * RING_BLOCK, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd, 0);
    if (m == MAP_FAILED) return;
    p->ring = (uint8_t *)m; p->ring_bytes = (size_t)RING_BLOCKS * RING_BLOCK;
    p->slots = RING_BLOCKS * RING_BLOCK / RING_FRAME; p->next = 0; p->hole_since_us = -1;
}
static inline volatile struct tpacket2_hdr *ring_slot(dpport *p, int i) { return (volatile struct tpacket2_hdr *)(p->ring + (size_t)i * RING_FRAME); }

/* one frame queued whole on the socket (TP_STATUS_COPY): NULL when none */
static uint8_t *recv_copy(int fd, int64_t *len)
{
    uint8_t *buf = (uint8_t *)malloc(SLOT + 8);
    if (!buf) abort();
    struct iovec iov = { buf + 4, SLOT };
    char ctrl[CMSG_SPACE(sizeof(struct tpacket_auxdata))];
    struct sockaddr_ll addr;
    struct msghdr mh; memset(&mh, 0, sizeof mh);
    mh.msg_iov = &iov; mh.msg_iovlen = 1; mh.msg_name = &addr; mh.msg_namelen = sizeof addr;
    mh.msg_control = ctrl; mh.msg_controllen = sizeof ctrl;
    ssize_t n = recvmsg(fd, &mh, MSG_DONTWAIT);
    if (n < 0 || addr.sll_pkttype == PACKET_OUTGOING) { free(buf); return NULL; }
    uint8_t *f = buf + 4;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level != SOL_PACKET || c->cmsg_type != PACKET_AUXDATA) continue;
        struct tpacket_auxdata aux; memcpy(&aux, CMSG_DATA(c), sizeof aux);
        if ((aux.tp_vlan_tci || (aux.tp_status & TP_STATUS_VLAN_VALID)) && n >= 12) {
            int tpid = (aux.tp_status & TP_STATUS_VLAN_TPID_VALID) && aux.tp_vlan_tpid ? aux.tp_vlan_tpid : 0x8100;
            memmove(f - 4, f, 12); f -= 4;
            f[12] = (uint8_t)(tpid >> 8); f[13] = (uint8_t)tpid; f[14] = (uint8_t)(aux.tp_vlan_tci >> 8); f[15] = (uint8_t)aux.tp_vlan_tci;
            n += 4;
        }
    }
    uint8_t *out = (uint8_t *)malloc((size_t)n + 1);
    memcpy(out, f, (size_t)n); free(buf);
    *len = n;
    return out;
}

/* rxring.py's RxRing.read, including its hole skipping (mu held) */
static int ring_read(dp *d, dpport *p, int no, int64_t room)
{
    int got = 0;
    if (!(ring_slot(p, p->next)->tp_status & TP_STATUS_USER)) {
        int ahead, found = 0;
        for (ahead = 1; ahead <= HOLE_LOOKAHEAD; ahead++)
            if (ring_slot(p, (p->next + ahead) % p->slots)->tp_status & TP_STATUS_USER) { found = 1; break; }
        if (!found) { p->hole_since_us = -1; return 0; }
        int64_t now = dp_now(d);
        if (p->hole_since_us < 0) { p->hole_since_us = now; return 0; }
        if (now - p->hole_since_us < HOLE_WAIT_US) return 0;
        p->hole_since_us = -1; p->holes += ahead;
        p->next = (p->next + ahead) % p->slots;
    }
    p->hole_since_us = -1;
    while (got < room) {
        volatile struct tpacket2_hdr *h = ring_slot(p, p->next);
        uint32_t status = h->tp_status;
        if (!(status & TP_STATUS_USER)) break;
        __sync_synchronize();
        uint8_t *base = (uint8_t *)h;
        const struct sockaddr_ll *ll = (const struct sockaddr_ll *)(base + TPACKET_ALIGN(sizeof(struct tpacket2_hdr)));
        uint8_t *frame = NULL; int64_t len = 0;
        uint8_t *copied = NULL; int64_t clen = 0;
        if (status & TP_STATUS_COPY) copied = recv_copy(p->fd, &clen);
        if (ll->sll_pkttype == PACKET_OUTGOING) { free(copied); copied = NULL; }
        else if (copied) { frame = copied; len = clen; }
        else if (h->tp_snaplen < h->tp_len) p->truncated++;
        else {
            len = h->tp_snaplen;
            int vlan = (h->tp_vlan_tci || (status & TP_STATUS_VLAN_VALID)) && len >= 12;
            frame = (uint8_t *)malloc((size_t)len + 5);
            if (!frame) abort();
            const uint8_t *src = base + h->tp_mac;
            if (vlan) {
                int tpid = (status & TP_STATUS_VLAN_TPID_VALID) && h->tp_vlan_tpid ? h->tp_vlan_tpid : 0x8100;
                memcpy(frame, src, 12);
                frame[12] = (uint8_t)(tpid >> 8); frame[13] = (uint8_t)tpid;
                frame[14] = (uint8_t)(h->tp_vlan_tci >> 8); frame[15] = (uint8_t)h->tp_vlan_tci;
                memcpy(frame + 16, src + 12, (size_t)len - 12);
                len += 4;
            } else memcpy(frame, src, (size_t)len);
        }
        __sync_synchronize();
        h->tp_status = TP_STATUS_KERNEL;
        p->next = p->next + 1 < p->slots ? p->next + 1 : 0;
        if (!frame) continue;
        if (oversize(p, frame, len)) { p->rx_oversize++; free(frame); continue; }
        p->rx_frames++; p->rx_bytes += len;
        pcap_write(&p->cap_in, frame, len);
        if (mac_pfc(d, no, frame, len)) { free(frame); continue; }
        ib_push(d, no, frame, len);
        got++;
    }
    return got;
}

/* ------------------------------------------------------------------ threads */
static void txb_add(txb *b, int64_t port, const uint8_t *data, int64_t len)
{
    if (b->n + 1 > b->cap) {
        int cap = b->cap ? b->cap * 2 : 64;
        b->port = (int64_t *)realloc(b->port, sizeof(int64_t) * (size_t)cap);
        b->off = (int64_t *)realloc(b->off, sizeof(int64_t) * (size_t)cap);
        b->len = (int64_t *)realloc(b->len, sizeof(int64_t) * (size_t)cap);
        if (!b->port || !b->off || !b->len) abort();
        b->cap = cap;
    }
    if (b->used + len > b->bufcap) {
        int64_t cap = b->bufcap ? b->bufcap : 65536;
        while (cap < b->used + len) cap *= 2;
        b->buf = (uint8_t *)realloc(b->buf, (size_t)cap);
        if (!b->buf) abort();
        b->bufcap = cap;
    }
    b->port[b->n] = port; b->off[b->n] = b->used; b->len[b->n] = len;
    if (len > 0) memcpy(b->buf + b->used, data, (size_t)len);
    b->used += len > 0 ? len : 0;
    b->n++;
}
static void txb_free(txb *b) { free(b->port); free(b->off); free(b->len); free(b->buf); free(b); }
/* an empty batch (mu held) */
static txb *txb_take(dp *d)
{
    txb *b = d->tx_free;
    if (b) { d->tx_free = b->next; }
    else { b = (txb *)calloc(1, sizeof(txb)); if (!b) abort(); }
    b->next = NULL; b->n = 0; b->used = 0;
    return b;
}

static void wake_tx(dp *d) { uint64_t one = 1; ssize_t r = write(d->efd_tx, &one, 8); (void)r; }
static void wake_rx(dp *d) { uint64_t one = 1; ssize_t r = write(d->efd_rx, &one, 8); (void)r; }
/* the worker told to look again (mu held): a frame, a setting, a pause, stop */
static void wake_worker(dp *d)
{
    pthread_cond_broadcast(&d->work_cv);
    if (d->efd_wk >= 0 && d->wk_idle && !d->wk_kicked) { uint64_t one = 1; ssize_t r = write(d->efd_wk, &one, 8); (void)r; d->wk_kicked = 1; }
}
/* the worker's wait made to end at dp time until_us (mu held): its timer moved, no wake-up */
static int wk_timer_at(dp *d, int64_t until_us)
{
    struct itimerspec its; memset(&its, 0, sizeof its);
    int64_t ns = d->clock_start_ns + until_us * 1000LL;
    its.it_value.tv_sec = ns / 1000000000LL; its.it_value.tv_nsec = ns % 1000000000LL;
    if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0) its.it_value.tv_nsec = 1;
    return timerfd_settime(d->tfd_wk, TFD_TIMER_ABSTIME, &its, NULL);
}

/* a batch's frames to their ports (mu held): a frame for the CPU port goes to the
 * packet-in list, one for a port that does not exist is counted (no_port); the rest are
 * queued for the tx thread in order */
static void tx_queue(dp *d, txb *b)
{
    int64_t live = 0;
    for (int i = 0; i < b->n; i++) {
        int64_t port = b->port[i], len = b->len[i];
        const uint8_t *data = b->buf + b->off[i];
        if (port == d->cpu_port && (port < 0 || port >= MAXPORT || !d->ports[port] || !d->ports[port]->is_port)) {
            if (d->ncpu + 1 > d->capcpu) {
                int cap = d->capcpu ? d->capcpu * 2 : 16;
                d->cpu_frames = (uint8_t **)realloc(d->cpu_frames, sizeof(uint8_t *) * (size_t)cap);
                d->cpu_len = (int64_t *)realloc(d->cpu_len, sizeof(int64_t) * (size_t)cap);
                d->capcpu = cap;
            }
            uint8_t *c = (uint8_t *)malloc((size_t)(len > 0 ? len : 1)); memcpy(c, data, (size_t)len);
            d->cpu_frames[d->ncpu] = c; d->cpu_len[d->ncpu] = len; d->ncpu++;
            b->len[i] = -1;
            continue;
        }
        dpport *p = (port >= 0 && port < MAXPORT) ? d->ports[port] : NULL;
        if (!p || !p->is_port) { d->st_no_port++; b->len[i] = -1; continue; }
        live++;
    }
    if (!live) { b->next = d->tx_free; d->tx_free = b; return; }
    b->next = NULL;
    if (d->tx_tail) d->tx_tail->next = b; else d->tx_head = b;
    d->tx_tail = b;
    d->tx_queued += live;
}

static void deliver_cpu(dp *d)
{
    /* called with no lock held: the packet-in handler is Python's; the worker or the rx
       thread (rx_handoff) may call it, cpu_mu keeps the frames in order */
    pthread_mutex_lock(&d->cpu_mu);
    pthread_mutex_lock(&d->mu);
    int n = d->ncpu; uint8_t **f = d->cpu_frames; int64_t *l = d->cpu_len;
    d->cpu_frames = NULL; d->cpu_len = NULL; d->ncpu = d->capcpu = 0;
    pthread_mutex_unlock(&d->mu);
    for (int i = 0; i < n; i++) {
        if (d->packet_in) { d->st_packet_in++; d->packet_in(f[i], l[i]); } else d->st_no_port++;
        free(f[i]);
    }
    free(f); free(l);
    pthread_mutex_unlock(&d->cpu_mu);
}

/* egress work one pass made, kept until the batch's queues are updated */
typedef struct wstage { void **item; int64_t *now; int n, cap; } wstage;
static void stage_work(dp_pipe *pipe, wstage *w, int64_t now)
{
    int nw = pipe->nwork(pipe->sw);
    for (int i = 0; i < nw; i++) {
        if (w->n + 1 > w->cap) {
            int cap = w->cap ? w->cap * 2 : 64;
            w->item = (void **)realloc(w->item, sizeof(void *) * (size_t)cap);
            w->now = (int64_t *)realloc(w->now, sizeof(int64_t) * (size_t)cap);
            if (!w->item || !w->now) abort();
            w->cap = cap;
        }
        w->item[w->n] = pipe->work(pipe->sw, i); w->now[w->n] = now; w->n++;
    }
}

/* what one thread needs to run worker batches and send them */
typedef struct wkst { deq eg[WB]; rxframe in[WB]; wstage ws; txb *cur; int64_t *cnt; } wkst;
static void wkst_init(dp *d, wkst *s)
{
    memset(s, 0, sizeof *s);
    s->cur = txb_take(d);
    s->cnt = (int64_t *)calloc(MAXPORT, sizeof(int64_t));
    if (!s->cnt) abort();
}
static void wkst_done(dp *d, wkst *s)
{
    s->cur->next = d->tx_free; d->tx_free = s->cur;
    free(s->ws.item); free(s->ws.now); free(s->cnt);
}

/* One worker batch (mu held on entry and on return): under the queues' lock it takes every
 * packet the traffic manager lets leave now (up to WB) and up to WB frames of the ingress
 * buffer; then, holding only the pipeline, runs the egress passes (in departure order) and
 * the ingress passes (in arrival order), the clock read once per pass; then, under the
 * lock again, the new work goes into the queues (in the order made) and the frames to the
 * tx list (one batch). Egress before ingress, as SwitchDevice._worker_loop gives
 * departures priority over new frames. The whole batch holds pipe_mu, so batches run by
 * different threads (worker, rx) never overlap and keep arrival order. Returns the passes
 * run (0: nothing to do now, *wake = the next departure or -1); with try_only, -1 when
 * the pipeline is busy (the control plane or the other thread holds it). */
static int wk_step(dp *d, wkst *s, double *wake, int try_only)
{
    *wake = -1;
    if (!(d->queued || d->ib_n)) return 0;
    /* lock order: pipe_mu, then mu */
    pthread_mutex_unlock(&d->mu);
    if (!try_only) pthread_mutex_lock(&d->pipe_mu);
    else if (pthread_mutex_trylock(&d->pipe_mu)) { pthread_mutex_lock(&d->mu); return -1; }
    pthread_mutex_lock(&d->mu);
    deq *eg = s->eg; rxframe *in = s->in; wstage *ws = &s->ws;
    int64_t now = dp_now(d);
    int neg = 0, nin = 0;
    while (neg < WB && tm_pick(d, (double)now, &eg[neg], wake)) neg++;
    while (nin < WB && d->ib_n) {
        in[nin++] = d->ib[d->ib_head];
        d->ib_head = (d->ib_head + 1) % d->ib_cap; d->ib_n--; d->ib_deq++;
    }
    if (nin && d->producers_waiting && ib_room(d) >= d->ib_room_to_wake) pthread_cond_broadcast(&d->room_cv);
    int has_pipe = d->has_pipe;
    dp_pipe pipe = d->pipe;
    txb *cur = s->cur;
    pthread_mutex_unlock(&d->mu);
    int64_t no_program = 0;
    ws->n = 0;
    for (int i = 0; i < neg; i++) {
        int64_t t = i ? dp_now(d) : now;
        int nout = pipe.egress_at
            ? pipe.egress_at(pipe.sw, t, eg[i].item, 1, eg[i].enq_ts, eg[i].enq_qdepth, eg[i].deq_qdepth)
            : pipe.run_egress(pipe.sw, eg[i].item, 1, eg[i].enq_ts, eg[i].enq_qdepth, eg[i].deq_qdepth);
        if (nout > 0) {
            p4nout *o = pipe.out(pipe.sw);
            for (int j = 0; j < nout; j++) txb_add(cur, o->port[j], o->buf + o->off[j], o->len[j]);
        }
        stage_work(&pipe, ws, t);
    }
    for (int i = 0; i < nin; i++) {
        if (!has_pipe) { no_program++; free(in[i].data); continue; }
        int64_t t = (i || neg) ? dp_now(d) : now;
        if (pipe.ingress_at) pipe.ingress_at(pipe.sw, t, in[i].port, in[i].data, in[i].len);
        else { pipe.run_ingress(pipe.sw, in[i].port, in[i].data, in[i].len); free(in[i].data); }
        stage_work(&pipe, ws, t);
    }
    pthread_mutex_lock(&d->mu);
    wd_reap(d);
    d->st_no_program += no_program;
    for (int i = 0; i < ws->n; i++) {
        int64_t info[5];
        pipe.item_info(ws->item[i], info);
        if (tm_enqueue(d, info[0], info[1], ws->item[i], ws->now[i]) < 0) { d->st_tm_drops++; pipe.item_free(pipe.sw, ws->item[i]); }
    }
    if (cur->n) { tx_queue(d, cur); s->cur = txb_take(d); }
    pthread_mutex_unlock(&d->pipe_mu);
    return neg + nin;
}

/* Every batch on the tx list to its ports (mu held on entry and on return; the caller
 * holds tx_mu): per port (in port order) the port's frames in the order made, sendmmsg()
 * TXB at a time (MSG_DONTWAIT; a frame the kernel refuses is a tx_error, as in ports.py) */
static void tx_send_list(dp *d, int64_t *cnt)
{
    struct mmsghdr msgs[TXB];
    struct iovec iov[TXB];
    txb *list = d->tx_head;
    d->tx_head = d->tx_tail = NULL; d->tx_queued = 0;
    if (!list) return;
    int order[MAXPORT]; int fds[MAXPORT]; pcapbuf *caps[MAXPORT]; int norder = d->nport_order;
    for (int k = 0; k < norder; k++) {
        int no = d->port_order[k]; dpport *p = d->ports[no];
        order[k] = no; fds[k] = p ? p->fd : -1; caps[k] = p ? &p->cap_out : NULL;
    }
    pthread_mutex_unlock(&d->mu);
    for (txb *b = list; b; b = b->next)
        for (int i = 0; i < b->n; i++) if (b->len[i] >= 0) cnt[b->port[i]]++;
    for (int k = 0; k < norder; k++) {
        int no = order[k];
        int64_t left = cnt[no];
        if (!left) continue;
        cnt[no] = 0;
        int fd = fds[k];
        int64_t sent = 0, sent_bytes = 0, errs = 0;
        txb *b = list; int i = 0;
        while (left > 0) {
            /* the port's next (up to) TXB frames, in order */
            int m = 0;
            const uint8_t *fp[TXB]; int64_t fl[TXB];
            while (m < TXB && b) {
                if (i >= b->n) { b = b->next; i = 0; continue; }
                if (b->port[i] == no && b->len[i] >= 0) { fp[m] = b->buf + b->off[i]; fl[m] = b->len[i]; m++; }
                i++;
            }
            if (!m) break;
            left -= m;
            if (fd < 0) { errs += m; continue; }
            for (int j = 0; j < m; j++) {
                iov[j].iov_base = (void *)fp[j]; iov[j].iov_len = (size_t)fl[j];
                memset(&msgs[j].msg_hdr, 0, sizeof(struct msghdr));
                msgs[j].msg_hdr.msg_iov = &iov[j]; msgs[j].msg_hdr.msg_iovlen = 1;
            }
            for (int j = 0; j < m;) {
                int r = sendmmsg(fd, msgs + j, (unsigned)(m - j), MSG_DONTWAIT);
                if (r < 0) { if (errno == EINTR) continue; errs++; j++; continue; }
                for (int q = 0; q < r; q++) { sent++; sent_bytes += fl[j + q]; if (caps[k]) pcap_write(caps[k], fp[j + q], fl[j + q]); }
                j += r;
                if (j < m) { errs++; j++; }     /* the frame the kernel refused: dropped */
            }
        }
        pthread_mutex_lock(&d->mu);
        dpport *p = d->ports[no];
        if (p) { p->tx_frames += sent; p->tx_bytes += sent_bytes; p->tx_errors += errs; }
        pthread_mutex_unlock(&d->mu);
    }
    pthread_mutex_lock(&d->mu);
    txb *last = list; while (last->next) last = last->next;
    last->next = d->tx_free; d->tx_free = list;
}

/* The tx list sent by the calling thread (mu held), so that a frame at low load costs no
 * tx wake-up; when the tx thread is sending, it is woken to take the list after it (the
 * list is taken whole under tx_mu, so the frames keep their order per port). */
static void tx_inline(dp *d, wkst *s)
{
    if (!d->tx_queued) return;
    if (pthread_mutex_trylock(&d->tx_mu)) {
        if (!d->tx_pending) { d->tx_pending = 1; wake_tx(d); }
        return;
    }
    d->st_inline_sends++;
    tx_send_list(d, s->cnt);
    pthread_mutex_unlock(&d->tx_mu);
}

/* The worker: batches (wk_step) while there is work now; the tx thread woken once a batch
 * of TXB frames is ready, and when nothing else is to do now the frames sent here
 * (tx_inline); else it sleeps until a frame arrives or a departure time comes. */
static void *worker_main(void *arg)
{
    dp *d = (dp *)arg;
    wkst s;
    pthread_mutex_lock(&d->mu);
    wkst_init(d, &s);
    int woke = 0;
    while (!d->stop) {
        double wake = -1;
        int ran = wk_step(d, &s, &wake, 0);
        if (woke && ran <= 0 && !d->tx_queued && !d->ib_n && !d->ncpu && !d->stop) d->st_wk_empty++;
        woke = 0;
        if (ran > 0) {
            int more = d->ib_n > 0 || d->queued > 0;
            if (d->tx_queued && !d->tx_pending) {
                if (!more) tx_inline(d, &s);
                else if (d->tx_queued >= TXB) { d->tx_pending = 1; wake_tx(d); }
            }
            if (d->ncpu) { pthread_mutex_unlock(&d->mu); deliver_cpu(d); pthread_mutex_lock(&d->mu); }
            continue;
        }
        if (d->tx_queued && !d->tx_pending) tx_inline(d, &s);
        if (d->ib_n || d->stop) continue;
        /* nothing now: wait for a frame, a departure, or a setting change. work_cv runs on
           CLOCK_MONOTONIC, the data plane's clock: the wait ends at the first whole us at or
           after the departure, so that dp_now() (us, rounded down) has reached it when the
           worker looks (a deadline on CLOCK_REALTIME, read apart from dp_now, could end a
           few us early: a wake-up for nothing and a departure up to 50 us late) */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        double wait_us = 200000.0;
        int64_t now = dp_now(d);
        if (wake >= 0) { double w = wake - (double)now; if (w < 50) w = 50; if (w < wait_us) wait_us = w; }
        double until = (double)now + wait_us;
        int64_t until_us = (int64_t)until;
        if ((double)until_us < until) until_us++;
        int64_t dl_ns = d->clock_cb ? (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec + (int64_t)(wait_us * 1000.0)
                                    : d->clock_start_ns + until_us * 1000LL;
        ts.tv_sec = dl_ns / 1000000000LL; ts.tv_nsec = dl_ns % 1000000000LL;
        d->wk_idle = 1; d->wk_wake_at = (double)until_us;
        if (d->efd_wk >= 0 && !d->clock_cb && wk_timer_at(d, until_us) == 0) {
            /* on the timer and efd_wk: the rx thread can move the timer earlier (a new
               departure) without waking this thread for nothing */
            pthread_mutex_unlock(&d->mu);
            struct pollfd w[2] = { { d->efd_wk, POLLIN, 0 }, { d->tfd_wk, POLLIN, 0 } };
            int pr = poll(w, 2, -1); (void)pr;
            pthread_mutex_lock(&d->mu);
            /* efd_wk is written only under mu with wk_kicked set: read it back here, also
               when it came after poll returned, so the next wait does not end at once; the
               timer needs no read: arming it again before the next wait clears its expiry */
            if (d->wk_kicked) { uint64_t v; ssize_t x = read(d->efd_wk, &v, 8); (void)x; d->wk_kicked = 0; }
        } else pthread_cond_timedwait(&d->work_cv, &d->mu, &ts);
        d->wk_idle = 0; d->st_wk_wakeups++; woke = 1;
    }
    wkst_done(d, &s);
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

#define RX_STEPS 4
/* Frames the rx thread just put in the ingress buffer (mu held): when the worker is
 * waiting, the rx thread runs the batches itself (up to RX_STEPS, as the worker would:
 * same order, same queues, the pipeline taken only if free) and sends their frames, so
 * that a frame at low load wakes one thread instead of three; else, or when work is left
 * now (frames in the buffer, more batches, the pipeline busy) or sooner than the
 * worker's wait ends by itself (a departure or a pause's end before wk_wake_at), the
 * worker is woken. A frame that waits in a rate-limited queue behind one the worker
 * already waits for does not wake it: it would find nothing due and sleep again
 * (one wake-up a frame in the story's rate-limited uplinks, issue 32). */
static void rx_handoff(dp *d, wkst *s)
{
    if (!d->wk_idle) { pthread_cond_signal(&d->work_cv); return; }
    int r = 0, steps = 0;
    double wake = -1;
    while (steps < RX_STEPS && !d->stop && (r = wk_step(d, s, &wake, 1)) > 0) steps++;
    d->st_rx_batches += steps;
    if (r != 0 || d->ib_n || !d->wk_idle) wake_worker(d);
    else if (d->queued && (wake < 0 || d->clock_cb || wake < d->wk_wake_at)) {
        int64_t at = (int64_t)wake; if ((double)at < wake) at++;
        if (wake >= 0 && d->efd_wk >= 0 && !d->clock_cb && wk_timer_at(d, at) == 0) d->wk_wake_at = (double)at;
        else wake_worker(d);
    }
    if (d->tx_queued && !d->tx_pending) tx_inline(d, s);
    if (d->ncpu) { pthread_mutex_unlock(&d->mu); deliver_cpu(d); pthread_mutex_lock(&d->mu); }
}

/* The rx thread's epoll set made to hold exactly the ports in pfd[1..n) (mu held): an
 * epoll set keeps its registrations between waits, where poll() adds and removes a wait
 * queue entry per socket per call. A port whose socket was set again (gen) is registered
 * again; an fd no longer wanted is removed unless another port now wants that number (a
 * closed socket left the set by itself and its number may be in use again). */
static void ep_sync(dp *d, const struct pollfd *pfd, const int *pno, int n)
{
    for (int k = 0; k < d->nport_order; k++) {
        int no = d->port_order[k];
        dpport *p = d->ports[no];
        if (!p) continue;
        int want = -1;
        for (int i = 1; i < n; i++) if (pno[i] == no) { want = pfd[i].fd; break; }
        if (want == p->ep_fd && (want < 0 || p->ep_gen == p->gen)) continue;
        if (p->ep_fd >= 0) {
            int reused = 0;
            for (int i = 1; i < n; i++) if (pfd[i].fd == p->ep_fd && pno[i] != no) reused = 1;
            if (!reused) epoll_ctl(d->ep, EPOLL_CTL_DEL, p->ep_fd, NULL);
        }
        if (want >= 0) {
            struct epoll_event ev = { .events = EPOLLIN, .data.u64 = (uint64_t)no + 1 };
            if (epoll_ctl(d->ep, EPOLL_CTL_ADD, want, &ev) < 0 && errno == EEXIST) epoll_ctl(d->ep, EPOLL_CTL_MOD, want, &ev);
        }
        p->ep_fd = want; p->ep_gen = p->gen;
    }
}

/* poll()'s answer from the epoll set: revents of pfd[i] set for the ready ones */
static int ep_wait(dp *d, struct pollfd *pfd, const int *pno, int n, int timeout_ms)
{
    struct epoll_event ev[MAXPORT + 1];
    int r = epoll_wait(d->ep, ev, n, timeout_ms);
    if (r <= 0) return r;
    int ready = 0;
    for (int e = 0; e < r; e++) {
        if (ev[e].data.u64 == TFD_TAG) { uint64_t x; ssize_t k = read(d->tfd, &x, 8); (void)k; d->tfd_at = -1; continue; }
        int no = (int)ev[e].data.u64 - 1;
        for (int i = 0; i < n; i++) if (pno[i] == no) { pfd[i].revents = (short)(ev[e].events ? ev[e].events : POLLIN); ready++; break; }
    }
    return ready;
}

static void *rx_main(void *arg)
{
    dp *d = (dp *)arg;
    struct mmsghdr msgs[RXB];
    struct iovec iov[RXB];
    struct sockaddr_ll addr[RXB];
    char ctrl[RXB][CMSG_SPACE(sizeof(struct tpacket_auxdata))];
    uint8_t *bufs = (uint8_t *)malloc((size_t)RXB * (SLOT + 4));
    if (!bufs) abort();
    dp_on_rx_thread = 1;
    wkst s;
    pthread_mutex_lock(&d->mu);
    wkst_init(d, &s);
    pthread_mutex_unlock(&d->mu);
    while (1) {
        struct pollfd pfd[MAXPORT + 1];
        int pno[MAXPORT + 1];
        int n = 0;
        pthread_mutex_lock(&d->mu);
        if (d->stop) { pthread_mutex_unlock(&d->mu); break; }
        /* a full ingress buffer: stop reading until there is room (BMv2's back pressure) */
        while (!d->stop && ib_room(d) <= 0) {
            d->ib_full_waits++;
            d->producers_waiting++;
            pthread_cond_wait(&d->room_cv, &d->mu);
            d->producers_waiting--;
        }
        pfd[n].fd = d->efd_rx; pfd[n].events = POLLIN; pfd[n].revents = 0; pno[n++] = -1;
        dpport *caps[MAXPORT]; int ncaps = 0;
        int64_t now = dp_now(d), skip_next = -1;
        for (int k = 0; k < d->nport_order; k++) {
            int no = d->port_order[k];
            dpport *p = d->ports[no];
            if (!p) continue;
            if (p->cap_in.fd >= 0 || p->cap_out.fd >= 0) caps[ncaps++] = p;
            if (!p->is_port || p->fd < 0) continue;
            if (p->down && now < p->skip_until_us) { if (skip_next < 0 || p->skip_until_us < skip_next) skip_next = p->skip_until_us; continue; }
            pfd[n].fd = p->fd; pfd[n].events = POLLIN; pfd[n].revents = 0; pno[n++] = no;
        }
        int hole = 0;
        for (int k = 0; k < d->nport_order; k++) { dpport *p = d->ports[d->port_order[k]]; if (p && p->ring && p->hole_since_us >= 0) hole = 1; }
        /* no timer unless something is due: a ring hole to look at again (1 ms), a port
           left out after ENETDOWN (until its skip ends); a setting, a new socket or stop
           writes efd_rx */
        int timeout_ms = -1;
        if (hole) timeout_ms = 1;
        else if (skip_next >= 0) { int64_t ms = (skip_next - now + 999) / 1000; timeout_ms = ms < 1 ? 1 : ms > 50 ? 50 : (int)ms; }
        if (d->ep >= 0) ep_sync(d, pfd, pno, n);
        pthread_mutex_unlock(&d->mu);
        int64_t due_at = ncaps ? pcap_due(caps, ncaps) : -1;
        int timer_ok = 0;
        if (d->tfd >= 0) {
            /* a timerfd at the next capture deadline, moved only when the deadline moves
               (about once per PCAP_FLUSH_US while frames come), not a timeout on every wait:
               on this VM arming and cancelling a timer around each sleep cost ~4 us a frame */
            timer_ok = 1;
            if (due_at != d->tfd_at) {
                struct itimerspec its; memset(&its, 0, sizeof its);
                if (due_at >= 0) { its.it_value.tv_sec = due_at / 1000000; its.it_value.tv_nsec = (due_at % 1000000) * 1000; }
                if (timerfd_settime(d->tfd, TFD_TIMER_ABSTIME, &its, NULL) == 0) d->tfd_at = due_at; else timer_ok = 0;
            }
        }
        if (due_at >= 0 && !timer_ok) {
            int64_t ms = (due_at - mono_us() + 999) / 1000;
            if (ms < 1) ms = 1;
            if (timeout_ms < 0 || ms < timeout_ms) timeout_ms = (int)ms;
        }
        int r = d->ep >= 0 ? ep_wait(d, pfd, pno, n, timeout_ms) : poll(pfd, (nfds_t)n, timeout_ms);
        if (r < 0) continue;
        if (r == 0 && !hole) continue;      /* (a capture's timer: written at the top) */
        if (r == 0) for (int i = 1; i < n; i++) pfd[i].revents = POLLIN;   /* look at the holes again */
        if (pfd[0].revents) { uint64_t v; ssize_t x = read(d->efd_rx, &v, 8); (void)x; }
        int pushed = 0;     /* frames for the worker, handed over once every ready port is read */
        for (int i = 1; i < n; i++) {
            if (!pfd[i].revents) continue;
            int no = pno[i];
            pthread_mutex_lock(&d->mu);
            dpport *p = d->ports[no];
            int fd = p ? p->fd : -1;
            int64_t room = ib_room(d);
            pthread_mutex_unlock(&d->mu);
            if (fd < 0 || room <= 0) continue;
            if (p->ring) {
                pthread_mutex_lock(&d->mu);
                if (p->fd == fd && p->ring && ring_read(d, p, no, room)) { pushed = 1; if (!d->wk_idle) pthread_cond_signal(&d->work_cv); }
                pthread_mutex_unlock(&d->mu);
                continue;
            }
            int want = room < RXB ? (int)room : RXB;
            for (int k = 0; k < want; k++) {
                iov[k].iov_base = bufs + (size_t)k * (SLOT + 4) + 4; iov[k].iov_len = SLOT;
                memset(&msgs[k].msg_hdr, 0, sizeof(struct msghdr));
                msgs[k].msg_hdr.msg_iov = &iov[k]; msgs[k].msg_hdr.msg_iovlen = 1;
                msgs[k].msg_hdr.msg_name = &addr[k]; msgs[k].msg_hdr.msg_namelen = sizeof addr[k];
                msgs[k].msg_hdr.msg_control = ctrl[k]; msgs[k].msg_hdr.msg_controllen = sizeof ctrl[k];
            }
            int got = recvmmsg(fd, msgs, (unsigned)want, MSG_DONTWAIT, NULL);
            if (got < 0) {
                int e = errno;
                if (e == EAGAIN || e == EWOULDBLOCK || e == EINTR) continue;
                pthread_mutex_lock(&d->mu);
                if (e == ENETDOWN) { p->down = 1; p->skip_until_us = dp_now(d) + 50000; }
                else { p->rx_errors++; p->need_reopen = 1; p->fd = -1; ring_close(p); pthread_cond_broadcast(&d->reopen_cv); }
                pthread_mutex_unlock(&d->mu);
                continue;
            }
            pthread_mutex_lock(&d->mu);
            p->down = 0;
            for (int k = 0; k < got; k++) {
                if (addr[k].sll_pkttype == PACKET_OUTGOING) continue;
                uint8_t *f = (uint8_t *)iov[k].iov_base;
                int64_t len = msgs[k].msg_len;
                if (len > SLOT) len = SLOT;
                /* 802.1Q tag kept in PACKET_AUXDATA: put it back (libpcap's rule) */
                for (struct cmsghdr *c = CMSG_FIRSTHDR(&msgs[k].msg_hdr); c; c = CMSG_NXTHDR(&msgs[k].msg_hdr, c)) {
                    if (c->cmsg_level != SOL_PACKET || c->cmsg_type != PACKET_AUXDATA) continue;
                    struct tpacket_auxdata aux; memcpy(&aux, CMSG_DATA(c), sizeof aux);
                    if ((aux.tp_vlan_tci || (aux.tp_status & TP_STATUS_VLAN_VALID)) && len >= 12) {
                        int tpid = (aux.tp_status & TP_STATUS_VLAN_TPID_VALID) && aux.tp_vlan_tpid ? aux.tp_vlan_tpid : 0x8100;
                        memmove(f - 4, f, 12);
                        f -= 4;
                        f[12] = (uint8_t)(tpid >> 8); f[13] = (uint8_t)tpid;
                        f[14] = (uint8_t)(aux.tp_vlan_tci >> 8); f[15] = (uint8_t)aux.tp_vlan_tci;
                        len += 4;
                    }
                }
                if (oversize(p, f, len)) { p->rx_oversize++; continue; }
                p->rx_frames++; p->rx_bytes += len;
                pcap_write(&p->cap_in, f, len);
                if (mac_pfc(d, no, f, len)) continue;
                uint8_t *c = (uint8_t *)malloc((size_t)(len > 0 ? len : 1));
                if (!c) abort();
                memcpy(c, f, (size_t)len);
                ib_push(d, no, c, len);
                pushed = 1;
            }
            if (!d->wk_idle) pthread_cond_signal(&d->work_cv);
            pthread_mutex_unlock(&d->mu);
        }
        if (pushed) {
            pthread_mutex_lock(&d->mu);
            rx_handoff(d, &s);
            pthread_mutex_unlock(&d->mu);
        }
    }
    pthread_mutex_lock(&d->mu);
    wkst_done(d, &s);
    pthread_mutex_unlock(&d->mu);
    free(bufs);
    return NULL;
}

/* The tx thread: woken when a batch of TXB frames is ready under load (or the worker
 * could not send), sends every batch on the list (tx_send_list) */
static void *tx_main(void *arg)
{
    dp *d = (dp *)arg;
    int64_t *cnt = (int64_t *)calloc(MAXPORT, sizeof(int64_t));
    if (!cnt) abort();
    while (1) {
        struct pollfd pfd = { d->efd_tx, POLLIN, 0 };
        int r = poll(&pfd, 1, 200);
        if (r > 0) { uint64_t v; ssize_t x = read(d->efd_tx, &v, 8); (void)x; }
        pthread_mutex_lock(&d->tx_mu);
        pthread_mutex_lock(&d->mu);
        int stop = d->stop;
        d->tx_pending = 0;
        if (d->tx_head) d->st_tx_wakeups++;
        tx_send_list(d, cnt);
        pthread_mutex_unlock(&d->mu);
        pthread_mutex_unlock(&d->tx_mu);
        if (stop) break;
    }
    free(cnt);
    return NULL;
}

/* ------------------------------------------------------------------ API */
DP_EXPORT dp *dp_new(int prio_queues, int64_t depth, double rate, double line, int pfc, int passthrough,
                     int64_t ingress_capacity, int64_t clock_start_ns, int64_t cpu_port)
{
    dp *d = (dp *)calloc(1, sizeof(dp));
    if (!d) return NULL;
    pthread_mutex_init(&d->pipe_mu, NULL); pthread_mutex_init(&d->mu, NULL); pthread_mutex_init(&d->tx_mu, NULL); pthread_mutex_init(&d->cpu_mu, NULL);
    pthread_condattr_t mono; pthread_condattr_init(&mono); pthread_condattr_setclock(&mono, CLOCK_MONOTONIC);
    pthread_cond_init(&d->work_cv, &mono); pthread_condattr_destroy(&mono);
    pthread_cond_init(&d->room_cv, NULL); pthread_cond_init(&d->reopen_cv, NULL);
    d->efd_rx = eventfd(0, EFD_NONBLOCK); d->efd_tx = eventfd(0, EFD_NONBLOCK);
    d->ep = epoll_create1(EPOLL_CLOEXEC);
    if (d->ep >= 0) { struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 0 }; epoll_ctl(d->ep, EPOLL_CTL_ADD, d->efd_rx, &ev); }
    d->efd_wk = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    d->tfd_wk = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (d->efd_wk < 0 || d->tfd_wk < 0) { if (d->efd_wk >= 0) close(d->efd_wk); if (d->tfd_wk >= 0) close(d->tfd_wk); d->efd_wk = d->tfd_wk = -1; }
    d->tfd = d->ep >= 0 ? timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC) : -1; d->tfd_at = -1;
    if (d->tfd >= 0) {
        struct epoll_event ev = { .events = EPOLLIN, .data.u64 = TFD_TAG };
        if (epoll_ctl(d->ep, EPOLL_CTL_ADD, d->tfd, &ev) < 0) { close(d->tfd); d->tfd = -1; }
    }
    d->prio_queues = prio_queues; d->def_depth = depth; d->def_rate = rate; d->def_line = line; d->def_pfc = pfc;
    d->passthrough = passthrough; d->clock_start_ns = clock_start_ns; d->cpu_port = cpu_port;
    d->ib_cap = ingress_capacity; d->ib = (rxframe *)calloc((size_t)ingress_capacity, sizeof(rxframe));
    d->ib_room_to_wake = ingress_capacity - ingress_capacity / 4; if (d->ib_room_to_wake < 1) d->ib_room_to_wake = 1;
    return d;
}
DP_EXPORT void dp_set_clock(dp *d, dp_clock_fn fn) { d->clock_cb = fn; }
DP_EXPORT void dp_set_packet_in(dp *d, dp_packet_in_fn fn) { d->packet_in = fn; }

DP_EXPORT void dp_add_port(dp *d, int no, int fd)
{
    pthread_mutex_lock(&d->mu);
    dpport *p = port_get(d, no);
    if (p) { p->is_port = 1; p->fd = fd; p->gen++; p->need_reopen = 0; ring_open(p); }
    pthread_mutex_unlock(&d->mu);
    wake_rx(d);
}
DP_EXPORT void dp_set_max_frame(dp *d, int no, int max_frame)
{
    pthread_mutex_lock(&d->mu);
    dpport *p = port_get(d, no);
    if (p) p->max_frame = max_frame;
    pthread_mutex_unlock(&d->mu);
}
DP_EXPORT void dp_set_fd(dp *d, int no, int fd)
{
    pthread_mutex_lock(&d->mu);
    dpport *p = port_get(d, no);
    if (p) { p->fd = fd; p->gen++; p->need_reopen = 0; ring_open(p); }
    pthread_mutex_unlock(&d->mu);
    wake_rx(d);
}
DP_EXPORT int dp_need_reopen(dp *d, int *out, int cap)
{
    int n = 0;
    pthread_mutex_lock(&d->mu);
    for (int k = 0; k < d->nport_order && n < cap; k++) { dpport *p = d->ports[d->port_order[k]]; if (p->is_port && p->need_reopen) out[n++] = d->port_order[k]; }
    pthread_mutex_unlock(&d->mu);
    return n;
}
/* Wait (at most timeout_ms) until a port's socket needs reopening or the data plane
 * stops; returns the number of ports that need it. The port supervisor (device.py) waits
 * here instead of polling dp_need_reopen ten times a second. */
DP_EXPORT int dp_wait_reopen(dp *d, int timeout_ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t ns = ts.tv_nsec + (int64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000LL;
    ts.tv_sec += ns / 1000000000LL; ts.tv_nsec = ns % 1000000000LL;
    pthread_mutex_lock(&d->mu);
    int n = 0;
    while (1) {
        n = 0;
        for (int k = 0; k < d->nport_order; k++) { dpport *p = d->ports[d->port_order[k]]; if (p->is_port && p->need_reopen) n++; }
        if (n || d->stop || timeout_ms <= 0) break;
        if (pthread_cond_timedwait(&d->reopen_cv, &d->mu, &ts) == ETIMEDOUT) break;
    }
    pthread_mutex_unlock(&d->mu);
    return n;
}
DP_EXPORT int dp_port_down(dp *d, int no) { dpport *p = (no >= 0 && no < MAXPORT) ? d->ports[no] : NULL; return p ? p->down : 0; }

/* the pipeline (NULL run_ingress: none); queued packets of the old one are dropped.
 * Call with the pipeline mutex held (dp_lock) or before dp_start. */
DP_EXPORT int64_t dp_set_pipe(dp *d, const dp_pipe *pipe)
{
    pthread_mutex_lock(&d->mu);
    int64_t n = tm_flush(d);
    if (pipe && pipe->run_ingress) { d->pipe = *pipe; d->has_pipe = 1; } else d->has_pipe = 0;
    pthread_mutex_unlock(&d->mu);
    return n;
}
DP_EXPORT void dp_set_capture(dp *d, int no, int in_fd, int out_fd)
{
    pthread_mutex_lock(&d->mu);
    dpport *p = port_get(d, no);
    pthread_mutex_unlock(&d->mu);
    if (p) { pcap_set(&p->cap_in, in_fd); pcap_set(&p->cap_out, out_fd); }
}
DP_EXPORT void dp_touch_port(dp *d, int no) { pthread_mutex_lock(&d->mu); port_get(d, no); pthread_mutex_unlock(&d->mu); }

DP_EXPORT void dp_start(dp *d)
{
    if (d->started) return;
    d->started = 1;
    pthread_create(&d->rx_th, NULL, rx_main, d);
    pthread_create(&d->wk_th, NULL, worker_main, d);
    pthread_create(&d->tx_th, NULL, tx_main, d);
    /* named, so that top -H, perf and /proc/PID/task/TID/comm tell them from the Python
       threads (all "python" otherwise) */
    pthread_setname_np(d->rx_th, "p4sim-dp-rx");
    pthread_setname_np(d->wk_th, "p4sim-dp-worker");
    pthread_setname_np(d->tx_th, "p4sim-dp-tx");
}
DP_EXPORT void dp_stop(dp *d)
{
    pthread_mutex_lock(&d->mu);
    d->stop = 1;
    wake_worker(d); pthread_cond_broadcast(&d->room_cv); pthread_cond_broadcast(&d->reopen_cv);
    pthread_mutex_unlock(&d->mu);
    wake_rx(d); wake_tx(d);
    if (d->started) { pthread_join(d->rx_th, NULL); pthread_join(d->wk_th, NULL); pthread_join(d->tx_th, NULL); }
    d->started = 0;
    /* every capture record still waiting written (before Python closes the files) */
    pthread_mutex_lock(&d->mu);
    for (int k = 0; k < d->nport_order; k++) { dpport *p = d->ports[d->port_order[k]]; pcap_set(&p->cap_in, p->cap_in.fd); pcap_set(&p->cap_out, p->cap_out.fd); }
    pthread_mutex_unlock(&d->mu);
}
DP_EXPORT void dp_lock(dp *d) { pthread_mutex_lock(&d->pipe_mu); }
DP_EXPORT void dp_unlock(dp *d) { pthread_mutex_unlock(&d->pipe_mu); }

/* a frame for ingress as if received on `port` (PacketOut on the CPU port); waits for room */
DP_EXPORT int dp_inject(dp *d, int64_t port, const uint8_t *data, int64_t len)
{
    uint8_t *c = (uint8_t *)malloc((size_t)(len > 0 ? len : 1));
    if (!c) return -1;
    memcpy(c, data, (size_t)len);
    pthread_mutex_lock(&d->mu);
    while (!d->stop && ib_room(d) <= 0) { d->producers_waiting++; pthread_cond_wait(&d->room_cv, &d->mu); d->producers_waiting--; }
    if (d->stop) { d->ib_dropped++; pthread_mutex_unlock(&d->mu); free(c); return -1; }
    ib_push(d, port, c, len);
    wake_worker(d);
    pthread_mutex_unlock(&d->mu);
    return 0;
}

/* settings (tm.py): port -1 = every port (and the default), prio -1 = every priority */
DP_EXPORT int dp_set_queue(dp *d, int what, double value, int port, int prio)
{
    if (prio >= d->prio_queues) return -1;
    pthread_mutex_lock(&d->mu);
    if (port < 0 && prio < 0) { if (what == 0) d->def_depth = (int64_t)value; else d->def_rate = value; }
    for (int k = 0; k < (port < 0 ? d->nport_order : 1); k++) {
        dpport *p = port < 0 ? d->ports[d->port_order[k]] : port_get(d, port);
        if (!p) continue;
        for (int i = 0; i < d->prio_queues; i++) {
            if (prio >= 0 && i != prio) continue;
            if (what == 0) p->q[i].depth_pkts = (int64_t)value; else p->q[i].rate_pps = value;
        }
    }
    wake_worker(d);
    pthread_mutex_unlock(&d->mu);
    return 0;
}
DP_EXPORT void dp_set_line_rate(dp *d, double gbps, int port)
{
    pthread_mutex_lock(&d->mu);
    if (port < 0) { d->def_line = gbps; for (int k = 0; k < d->nport_order; k++) d->ports[d->port_order[k]]->line_rate_gbps = gbps; }
    else { dpport *p = port_get(d, port); if (p) p->line_rate_gbps = gbps; }
    pthread_mutex_unlock(&d->mu);
}
DP_EXPORT void dp_set_pfc(dp *d, int enabled, int port)
{
    pthread_mutex_lock(&d->mu);
    if (port < 0) d->def_pfc = enabled;
    double now = (double)dp_now(d);
    for (int k = 0; k < (port < 0 ? d->nport_order : 1); k++) {
        dpport *p = port < 0 ? d->ports[d->port_order[k]] : port_get(d, port);
        if (!p) continue;
        p->pfc_enabled = enabled;
        if (!enabled) for (int i = 0; i < d->prio_queues; i++) q_resume(&p->q[i], now);
    }
    wake_worker(d);
    pthread_mutex_unlock(&d->mu);
}
/* tm.set_pfc_watchdog: detect_us 0 stops it (queues in a storm restored, counted) */
DP_EXPORT void dp_set_pfc_watchdog(dp *d, double detect_us, double restore_us, int drop)
{
    pthread_mutex_lock(&d->mu);
    if (detect_us <= 0)
        for (int k = 0; k < d->nport_order; k++) {
            dpport *p = d->ports[d->port_order[k]];
            for (int i = 0; i < MAXPRIO; i++) if (p->q[i].wd_storm) { p->q[i].wd_storm = 0; p->q[i].wd_restored++; }
        }
    d->wd_detect_us = detect_us > 0 ? detect_us : 0; d->wd_restore_us = restore_us; d->wd_drop = drop;
    wake_worker(d);
    pthread_mutex_unlock(&d->mu);
}
DP_EXPORT int dp_pfc_enabled(dp *d, int port)
{
    pthread_mutex_lock(&d->mu);
    dpport *p = (port >= 0 && port < MAXPORT) ? d->ports[port] : NULL;
    int v = p ? p->pfc_enabled : d->def_pfc;
    pthread_mutex_unlock(&d->mu);
    return v;
}
DP_EXPORT void dp_set_passthrough(dp *d, int on) { pthread_mutex_lock(&d->mu); d->passthrough = on; pthread_mutex_unlock(&d->mu); }

/* tm.pause() for a PFC frame the control plane builds (tests): pauses[prio] quanta, -1 none */
DP_EXPORT int dp_pause(dp *d, int port, const int *quanta)
{
    uint8_t f[60] = {0x01, 0x80, 0xc2, 0x00, 0x00, 0x01};
    int vec = 0;
    f[12] = 0x88; f[13] = 0x08; f[14] = 0x01; f[15] = 0x01;
    for (int i = 0; i < 8; i++) if (quanta[i] >= 0) { vec |= 1 << i; f[18 + 2 * i] = (uint8_t)(quanta[i] >> 8); f[19 + 2 * i] = (uint8_t)quanta[i]; }
    f[16] = (uint8_t)(vec >> 8); f[17] = (uint8_t)vec;
    pthread_mutex_lock(&d->mu);
    dpport *p = port_get(d, port);
    int ok = p && p->pfc_enabled;
    int64_t before = d->st_pfc_frames;
    if (ok) { mac_pfc(d, port, f, 60); d->st_pfc_frames = before; }
    pthread_mutex_unlock(&d->mu);
    return ok;
}

/* the traffic manager alone, without the threads (tests, with dp_set_clock): tm.enqueue
 * of an empty item (enq_qdepth, -1 dropped), and tm.poll_wake (1 when a packet left:
 * out = port, priority; else out[2] = the wake time in us, -1 none) */
DP_EXPORT int64_t dp_tm_enqueue(dp *d, int port, int prio)
{
    pthread_mutex_lock(&d->mu);
    int64_t r = tm_enqueue(d, port, prio, NULL, dp_now(d));
    pthread_mutex_unlock(&d->mu);
    return r;
}
DP_EXPORT int dp_tm_poll(dp *d, int64_t *out)
{
    pthread_mutex_lock(&d->mu);
    deq o; double wake;
    int got = tm_pick(d, (double)dp_now(d), &o, &wake);
    out[0] = got ? o.port : -1; out[1] = got ? o.prio : -1; out[2] = (int64_t)wake;
    pthread_mutex_unlock(&d->mu);
    return got;
}

/* queue_stats: ports with queues (out: numbers), then per port and priority */
DP_EXPORT int dp_ports(dp *d, int *out, int cap)
{
    pthread_mutex_lock(&d->mu);
    int n = 0;
    for (int k = 0; k < d->nport_order && n < cap; k++) out[n++] = d->port_order[k];
    pthread_mutex_unlock(&d->mu);
    return n;
}
/* out: line_rate, pfc_enabled, depth(port) ; per prio (13 each): depth, depth_pkts, rate,
 * paused, enqueued, dequeued, dropped, paused_us, pause_frames, pfcwd storm, storms,
 * restored, dropped */
DP_EXPORT int dp_queue_stats(dp *d, int port, double *out)
{
    pthread_mutex_lock(&d->mu);
    dpport *p = port_get(d, port);
    double now = (double)dp_now(d);
    out[0] = p->line_rate_gbps; out[1] = p->pfc_enabled; out[2] = (double)p->count;
    for (int i = 0; i < d->prio_queues; i++) {
        dpq *q = &p->q[i];
        wd_watch(d, p, q, now);
        q_settle(q, now);
        double extra = 0;
        if (q->paused) { double e = (now < q->paused_until ? now : q->paused_until) - q->pause_start; extra = e > 0 ? e : 0; }
        double *o = out + 3 + 13 * i;
        o[0] = (double)q->n; o[1] = (double)q->depth_pkts; o[2] = q->rate_pps; o[3] = q->paused;
        o[4] = (double)q->enqueued; o[5] = (double)q->dequeued; o[6] = (double)q->dropped; o[7] = q->paused_us + extra;
        o[8] = (double)q->pause_frames;
        o[9] = q->wd_storm; o[10] = (double)q->wd_storms; o[11] = (double)q->wd_restored; o[12] = (double)q->wd_dropped;
    }
    pthread_mutex_unlock(&d->mu);
    return d->prio_queues;
}
/* rx_frames, rx_bytes, tx_frames, tx_bytes, tx_errors, rx_errors, up(fd open), truncated,
 * holes, ring, rx_oversize */
DP_EXPORT void dp_port_counters(dp *d, int port, int64_t *out)
{
    pthread_mutex_lock(&d->mu);
    dpport *p = (port >= 0 && port < MAXPORT) ? d->ports[port] : NULL;
    if (p) { out[0] = p->rx_frames; out[1] = p->rx_bytes; out[2] = p->tx_frames; out[3] = p->tx_bytes; out[4] = p->tx_errors; out[5] = p->rx_errors; out[6] = p->fd >= 0; out[7] = p->truncated; out[8] = p->holes; out[9] = p->ring != NULL; out[10] = p->rx_oversize; }
    else memset(out, 0, sizeof(int64_t) * 11);
    pthread_mutex_unlock(&d->mu);
}
/* no_program, no_port, tm_drops, pfc_frames, packet_in, errors, ib: capacity, depth,
 * enqueued, dequeued, dropped, full_waits, high_water, queued; rx_batches, inline_sends,
 * tx_wakeups, wk_wakeups, wk_empty */
DP_EXPORT void dp_switch_stats(dp *d, int64_t *out)
{
    pthread_mutex_lock(&d->mu);
    out[0] = d->st_no_program; out[1] = d->st_no_port; out[2] = d->st_tm_drops; out[3] = d->st_pfc_frames;
    out[4] = d->st_packet_in; out[5] = d->st_errors;
    out[6] = d->ib_cap; out[7] = d->ib_n; out[8] = d->ib_enq; out[9] = d->ib_deq; out[10] = d->ib_dropped;
    out[11] = d->ib_full_waits; out[12] = d->ib_high; out[13] = d->queued;
    out[14] = d->st_rx_batches; out[15] = d->st_inline_sends; out[16] = d->st_tx_wakeups;
    out[17] = d->st_wk_wakeups; out[18] = d->st_wk_empty;
    pthread_mutex_unlock(&d->mu);
}
DP_EXPORT int64_t dp_now_us(dp *d) { return dp_now(d); }

DP_EXPORT void dp_free(dp *d)
{
    dp_stop(d);
    pthread_mutex_lock(&d->mu);
    tm_flush(d);
    for (int64_t i = 0; i < d->ib_n; i++) free(d->ib[(d->ib_head + i) % d->ib_cap].data);
    free(d->ib);
    for (int k = 0; k < d->nport_order; k++) {
        dpport *p = d->ports[d->port_order[k]];
        ring_close(p);
        free(p->cap_in.buf); free(p->cap_out.buf);
        pthread_mutex_destroy(&p->cap_in.mu); pthread_mutex_destroy(&p->cap_out.mu);
        free(p);
    }
    for (txb *b = d->tx_head, *nx; b; b = nx) { nx = b->next; txb_free(b); }
    for (txb *b = d->tx_free, *nx; b; b = nx) { nx = b->next; txb_free(b); }
    for (qent *e = d->qfree, *nx; e; e = nx) { nx = e->next; free(e); }
    pthread_mutex_unlock(&d->mu);
    close(d->efd_rx); close(d->efd_tx); if (d->ep >= 0) close(d->ep); if (d->tfd >= 0) close(d->tfd);
    if (d->efd_wk >= 0) { close(d->efd_wk); close(d->tfd_wk); }
    free(d);
}
