/* metadata.p4 — the user metadata that carries decisions between the controls, and the
 * flow-sample digest.
 *
 * Fields tagged @field_list(1) survive clones (PAUSE/RESUME generation and the
 * sample-to-CPU PacketIn); the rest is zero in a clone, as in BMv2.
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

    /* kept by clones */
    @field_list(1) bit<9>  ingress_port;
    @field_list(1) bit<7>  punt_reason;
    @field_list(1) bit<1>  sample_to_cpu;
    @field_list(1) bit<1>  pfc_gen;       /* this clone becomes a PAUSE/RESUME */
    @field_list(1) bit<3>  pfc_prio;
    @field_list(1) bit<16> pfc_time;      /* quanta; 0 = resume */

    /* egress */
    bit<1>  pfc_frame;      /* this packet is a generated PAUSE/RESUME */
}

#endif
