/* metadata.p4 — the user metadata that carries decisions between the controls, and the
 * flow-sample digest.
 *
 * Fields tagged @field_list(1) survive clones (PAUSE/RESUME generation and the
 * sample-to-CPU PacketIn); @field_list(2) the copy of an alarm report, cloned and then
 * recirculated; the rest is zero in a clone or a recirculated packet, as in BMv2.
 */
#ifndef FABRIC_METADATA_P4
#define FABRIC_METADATA_P4

#include "define.p4"

/* Digest sent by FabricIngress.sampling (receiver 1). */
struct flow_sample_t {
    bit<32> switch_id;
    bit<32> src_addr;
    bit<32> dst_addr;
    bit<8>  protocol;
    bit<16> src_port;
    bit<16> dst_port;
    bit<9>  ingress_port;
    bit<9>  egress_port;
    bit<32> qdepth;         /* last enq_qdepth seen on egress_port, packets */
    bit<32> packet_length;  /* bytes */
}

/* Digest sent by FabricIngress.alarms (receiver 2) for a port whose alarm level
 * FabricEgress.alarms changed (alarms.p4). */
struct alarm_digest_t {
    bit<32> switch_id;
    bit<9>  port;           /* the egress port whose level changed */
    bit<8>  level;          /* 0 clear, 1 notice, 2 warning, 3 critical */
    bit<8>  prev_level;
    bit<32> marks;          /* ECN marks of the window that decided it */
    bit<32> pkts;           /* packets of that window */
    bit<32> window_us;      /* how long that window had run */
    bit<32> max_qdepth;     /* largest enq_qdepth in it, packets */
    bit<32> seq;            /* reports of this port so far (1, 2, ...) */
}

/* Digest sent by FabricIngress.elephants (receiver 3) for a heavy hitter (elephants.p4). */
struct elephant_digest_t {
    bit<32> switch_id;
    bit<9>  port;           /* egress port */
    bit<32> src_addr;
    bit<32> dst_addr;
    bit<8>  protocol;
    bit<16> src_port;       /* 0 without UDP */
    bit<16> dst_port;
    bit<8>  reason;         /* 1 crossed the threshold, 2 its port was alarmed */
    bit<8>  level;          /* the port's alarm level as last reported */
    bit<32> packets;        /* the flow's packets in its window so far */
    bit<32> window_us;      /* how long its window has run */
}

struct fabric_metadata_t {
    /* switch_info */
    bit<32> switch_id;
    bit<8>  role;
    bit<32> ecmp_seed;

    /* forwarding decision */
    bit<1>  bypass;         /* packet_out from the CPU: no pipeline */
    bit<1>  dropped;        /* dropped in ingress (counted in telemetry.drops) */
    bit<1>  is_pfc;         /* a received MAC-control frame (dropped, not counted as a drop) */
    bit<1>  has_nexthop;
    bit<16> nexthop_id;
    bit<1>  has_ecmp_group;
    bit<16> ecmp_group_id;
    bit<16> ecmp_member;

    /* qos */
    bit<3>  priority;

    /* PFC accounting of a forwarded packet (ingress -> egress) */
    bit<1>  pfc_enabled;
    bit<32> pfc_index;      /* ingress_port * 8 + priority */
    bit<32> pfc_xoff;
    bit<32> pfc_xon;
    bit<16> pfc_quanta;
    bit<1>  pfc_dynamic;    /* the port's thresholds follow the free buffer (buffer.p4) */
    bit<1>  pfc_dyn_on;     /* ... and the packet's priority has an alpha: egress checks XON */
    bit<4>  pfc_alpha;      /* alpha = 2^(pfc_alpha - 6) */
    bit<32> pfc_xon_cells;
    bit<32> pfc_xon_offset_cells;

    /* shared buffer kept by the program (buffer.p4), ingress -> egress */
    bit<1>  buf_on;         /* FabricIngress.buffer.config is set */
    bit<1>  buf_counted;    /* this packet is in the counts */
    bit<32> buf_size;       /* cells in the pool */
    bit<32> buf_cells;      /* cells this packet takes */
    bit<32> buf_ing_index;  /* ingress_port * 8 + priority */
    bit<32> buf_eg_index;   /* egress_port * 8 + priority */
    bit<32> buf_ing_cells;  /* its ingress priority group (ingress: with it; egress: after it left) */
    bit<32> buf_free;       /* free cells with this packet in the buffer */
    bit<32> buf_free_after; /* egress: free cells after it left */
    bit<32> buf_queue_cells;/* egress: its egress queue with itself in it */

    /* the egress queue limit (admission.p4), ingress -> egress */
    bit<1>  adm_on;         /* FabricIngress.admission.config is set */
    bit<32> adm_limit;      /* packets one egress queue may hold */
    bit<1>  adm_counted;    /* this packet is in FabricIngress.admission.queued */
    bit<1>  adm_refused;    /* dropped by the limit (not a telemetry drop) */
    bit<32> adm_index;      /* egress_port * 8 + priority */

    /* kept by clones */
    @field_list(1) bit<9>  ingress_port;
    @field_list(1) bit<7>  punt_reason;
    @field_list(1) bit<1>  sample_to_cpu;
    @field_list(1) bit<1>  pfc_gen;       /* this clone becomes a PAUSE/RESUME */
    @field_list(1) bit<3>  pfc_prio;
    @field_list(1) bit<16> pfc_time;      /* quanta; 0 = resume */

    /* ingress: this packet carries a digest already (v1model keeps one per packet) */
    bit<1>  digest_taken;

    /* kept by an alarm report's copy (alarms.p4): egress clone, then recirculation */
    @field_list(2) bit<1> alarm_copy;     /* this packet is the copy that carries the report */
    @field_list(2) bit<9> alarm_port;     /* the egress port whose report it carries */

    /* egress */
    bit<1>  e2e_cloned;     /* an egress-to-egress clone is requested (v1model: one per packet) */
    bit<1>  pfc_frame;      /* this packet is a generated PAUSE/RESUME */
    bit<1>  ecn_marked;     /* FabricEgress.ecn marked this packet CE */
}

#endif
