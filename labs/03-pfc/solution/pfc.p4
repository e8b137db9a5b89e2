/* Lab 03 — PFC PAUSE and RESUME (solution).
 *
 * The switch counts, per (ingress port, priority), the packets it holds: +1 in ingress,
 * -1 when the packet leaves egress (occupancy register). When the count reaches XOFF it
 * sends one PAUSE for that priority out of the ingress port (the sender must stop); when
 * it falls back to XON it sends one RESUME (pause time 0). As the fabric does
 * (p4src/include/control/pfc.p4): the frame is a clone of the packet (I2E for PAUSE,
 * E2E for RESUME, clone session 100 + port) rewritten in egress into an exact
 * 60-byte IEEE 802.1Qbb frame:
 *
 *   dst 01:80:C2:00:00:01 | src port MAC | EtherType 0x8808 | opcode 0x0101 |
 *   class-enable vector (bit p = priority p) | pause_time_0 .. pause_time_7 | zeros
 *
 * Tables (set by the checker): MyIngress.routes (lpm dst -> set_port),
 * MyIngress.dscp_to_priority (exact dscp -> set_priority), MyIngress.pfc_thresholds
 * (exact ingress port -> set_thresholds(xoff_pkts, xon_pkts, pause_quanta)),
 * MyEgress.port_macs (exact egress port -> set_port_mac).
 */
#include <core.p4>
#include <v1model.p4>

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<16> ETHERTYPE_MAC_CONTROL = 0x8808;
const bit<48> PFC_DST_MAC = 0x0180C2000001;
const bit<16> PFC_OPCODE = 0x0101;
const bit<32> PFC_SESSION_BASE = 100;
const bit<32> PFC_FRAME_BYTES = 60;
const bit<8>  FL_CLONE = 1;
#define PFC_CELLS 4096

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header pfc_t {
    bit<16> opcode;
    bit<16> class_enable_vector;
    bit<16> pause_time_0;
    bit<16> pause_time_1;
    bit<16> pause_time_2;
    bit<16> pause_time_3;
    bit<16> pause_time_4;
    bit<16> pause_time_5;
    bit<16> pause_time_6;
    bit<16> pause_time_7;
}

header pfc_pad_t {
    bit<208> zeros;    /* 14 + 20 + 26 = 60 bytes */
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<6>  dscp;
    bit<2>  ecn;
    bit<16> total_len;
    bit<16> identification;
    bit<3>  flags;
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdr_checksum;
    bit<32> src_addr;
    bit<32> dst_addr;
}

struct headers_t {
    ethernet_t ethernet;
    pfc_t      pfc;
    pfc_pad_t  pfc_pad;
    ipv4_t     ipv4;
}

struct metadata_t {
    bit<1>  pfc_enabled;
    bit<32> pfc_index;              /* ingress_port * 8 + priority */
    bit<32> pfc_xoff;
    bit<32> pfc_xon;
    bit<16> pfc_quanta;
    @field_list(1) bit<9>  ingress_port;
    @field_list(1) bit<1>  pfc_gen;   /* this clone becomes a PAUSE/RESUME */
    @field_list(1) bit<3>  pfc_prio;
    @field_list(1) bit<16> pfc_time;  /* quanta; 0 = RESUME */
}

register<bit<32>>(PFC_CELLS) occupancy;
register<bit<1>>(PFC_CELLS) paused;

parser MyParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    action drop() {
        mark_to_drop(standard_metadata);
    }

    action set_port(bit<9> port) {
        standard_metadata.egress_spec = port;
    }

    table routes {
        key = { hdr.ipv4.dst_addr: lpm; }
        actions = { set_port; drop; }
        default_action = drop();
        size = 64;
    }

    action set_priority(bit<3> prio) {
        standard_metadata.priority = prio;
    }

    table dscp_to_priority {
        key = { hdr.ipv4.dscp: exact; }
        actions = { set_priority; NoAction; }
        default_action = NoAction();
        size = 64;
    }

    action set_thresholds(bit<32> xoff_pkts, bit<32> xon_pkts, bit<16> pause_quanta) {
        meta.pfc_enabled = 1;
        meta.pfc_xoff = xoff_pkts;
        meta.pfc_xon = xon_pkts;
        meta.pfc_quanta = pause_quanta;
    }

    table pfc_thresholds {
        key = { standard_metadata.ingress_port: exact; }
        actions = { set_thresholds; NoAction; }
        default_action = NoAction();
        size = 16;
    }

    apply {
        if (!hdr.ipv4.isValid()) {
            drop();
            return;
        }
        meta.ingress_port = standard_metadata.ingress_port;
        dscp_to_priority.apply();
        if (!routes.apply().hit) {
            return;
        }
        if (pfc_thresholds.apply().hit) {
            meta.pfc_index = ((bit<32>) standard_metadata.ingress_port) * 8
                             + (bit<32>) standard_metadata.priority;
            bit<32> count;
            occupancy.read(count, meta.pfc_index);
            count = count + 1;
            occupancy.write(meta.pfc_index, count);
            bit<1> is_paused;
            paused.read(is_paused, meta.pfc_index);
            // XOFF: the first packet that brings the count to xoff_pkts sends the PAUSE.
            if (is_paused == 0 && count >= meta.pfc_xoff) {
                paused.write(meta.pfc_index, 1);
                meta.pfc_gen = 1;
                meta.pfc_prio = standard_metadata.priority;
                meta.pfc_time = meta.pfc_quanta;
                clone_preserving_field_list(CloneType.I2E,
                    PFC_SESSION_BASE + (bit<32>) standard_metadata.ingress_port, FL_CLONE);
            }
        }
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    action set_port_mac(bit<48> mac) {
        hdr.ethernet.src_addr = mac;
    }

    table port_macs {
        key = { standard_metadata.egress_port: exact; }
        actions = { set_port_mac; NoAction; }
        default_action = NoAction();
        size = 16;
    }

    apply {
        if (standard_metadata.instance_type != 0 && meta.pfc_gen == 1) {
            // This clone becomes the 802.1Qbb frame.
            hdr.ipv4.setInvalid();
            hdr.ethernet.dst_addr = PFC_DST_MAC;
            hdr.ethernet.src_addr = 0;
            hdr.ethernet.ether_type = ETHERTYPE_MAC_CONTROL;
            port_macs.apply();
            hdr.pfc.setValid();
            hdr.pfc.opcode = PFC_OPCODE;
            hdr.pfc.class_enable_vector = ((bit<16>) 1) << meta.pfc_prio;
            hdr.pfc.pause_time_0 = 0;
            hdr.pfc.pause_time_1 = 0;
            hdr.pfc.pause_time_2 = 0;
            hdr.pfc.pause_time_3 = 0;
            hdr.pfc.pause_time_4 = 0;
            hdr.pfc.pause_time_5 = 0;
            hdr.pfc.pause_time_6 = 0;
            hdr.pfc.pause_time_7 = 0;
            if (meta.pfc_prio == 0) { hdr.pfc.pause_time_0 = meta.pfc_time; }
            if (meta.pfc_prio == 1) { hdr.pfc.pause_time_1 = meta.pfc_time; }
            if (meta.pfc_prio == 2) { hdr.pfc.pause_time_2 = meta.pfc_time; }
            if (meta.pfc_prio == 3) { hdr.pfc.pause_time_3 = meta.pfc_time; }
            if (meta.pfc_prio == 4) { hdr.pfc.pause_time_4 = meta.pfc_time; }
            if (meta.pfc_prio == 5) { hdr.pfc.pause_time_5 = meta.pfc_time; }
            if (meta.pfc_prio == 6) { hdr.pfc.pause_time_6 = meta.pfc_time; }
            if (meta.pfc_prio == 7) { hdr.pfc.pause_time_7 = meta.pfc_time; }
            hdr.pfc_pad.setValid();
            hdr.pfc_pad.zeros = 0;
            truncate(PFC_FRAME_BYTES);
        } else if (standard_metadata.instance_type == 0 && meta.pfc_enabled == 1) {
            bit<32> index = ((bit<32>) standard_metadata.ingress_port) * 8
                            + (bit<32>) standard_metadata.priority;
            bit<32> count;
            occupancy.read(count, index);
            if (count > 0) {
                count = count - 1;
            }
            occupancy.write(index, count);
            bit<1> is_paused;
            paused.read(is_paused, index);
            // XON: the first packet that brings the count down to xon_pkts sends the RESUME.
            if (is_paused == 1 && count <= meta.pfc_xon) {
                paused.write(index, 0);
                meta.pfc_gen = 1;
                meta.pfc_prio = standard_metadata.priority;
                meta.pfc_time = 0;
                clone_preserving_field_list(CloneType.E2E,
                    PFC_SESSION_BASE + (bit<32>) standard_metadata.ingress_port, FL_CLONE);
            }
        }
    }
}

control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.pfc);
        packet.emit(hdr.pfc_pad);
        packet.emit(hdr.ipv4);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
