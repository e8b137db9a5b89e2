/* The probe program of the BMv2 P4Runtime comparison (/work/shared/docs/bmv2-p4runtime.md,
 * pinned by test_bmv2_table.py): one object of every kind the table mentions. Names are
 * the ones the table's P4Info ids come from (MyIngress.t_exact is 38514850, ...).
 *
 * A PacketOut (ingress port = CPU port) skips the tables: egress_port 0 sends it back to
 * the CPU port (a PacketIn), another port sends it there; it pushes a learn_t digest
 * {11, ingress_port}. Other packets run every table.
 */
#include <core.p4>
#include <v1model.p4>

#define CPU_PORT 255

@controller_header("packet_in")
header packet_in_t { bit<9> ingress_port; bit<7> _pad; }
@controller_header("packet_out")
header packet_out_t { bit<9> egress_port; bit<7> _pad; }

header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> totalLen; bit<16> identification;
    bit<3> flags; bit<13> fragOffset; bit<8> ttl; bit<8> protocol; bit<16> hdrChecksum;
    bit<32> srcAddr; bit<32> dstAddr;
}

struct learn_t { bit<8> tag; bit<9> port; }
struct metadata { bit<2> color; }
struct headers { packet_out_t packet_out; packet_in_t packet_in; ethernet_t ethernet; ipv4_t ipv4; }

parser MyParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    value_set<bit<16>>(4) vs;
    state start {
        transition select(standard_metadata.ingress_port) { CPU_PORT: parse_packet_out; default: parse_ethernet; }
    }
    state parse_packet_out { packet.extract(hdr.packet_out); transition parse_ethernet; }
    state parse_ethernet {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) { 0x0800: parse_ipv4; vs: accept; default: accept; }
    }
    state parse_ipv4 { packet.extract(hdr.ipv4); transition accept; }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t standard_metadata) {
    direct_counter(CounterType.packets_and_bytes) t_exact_counter;
    direct_meter<bit<2>>(MeterType.packets) t_lpm_meter;
    counter(64, CounterType.packets_and_bytes) port_counter;
    meter(64, MeterType.packets) port_meter;
    register<bit<8>>(128) reg;
    action_profile(128) dmac_profile;
    action_selector(HashAlgorithm.crc16, 32, 14) port_selector;

    action drop() { mark_to_drop(standard_metadata); }
    action set_port(bit<9> port) { standard_metadata.egress_spec = port; }
    action set_port_counted(bit<9> port) { standard_metadata.egress_spec = port; }
    action set_port_metered(bit<9> port) {
        standard_metadata.egress_spec = port;
        t_lpm_meter.read(meta.color);
    }
    action set_dmac(bit<48> dmac) { hdr.ethernet.dstAddr = dmac; }

    table t_exact {
        key = { hdr.ethernet.dstAddr: exact; }
        actions = { set_port_counted; drop; NoAction; }
        default_action = NoAction();
        counters = t_exact_counter;
    }
    table t_const_entries {
        key = { hdr.ethernet.etherType: exact; }
        actions = { set_port; drop; NoAction; }
        const entries = { 0x0806: set_port(1); 0x86dd: set_port(2); }
        default_action = NoAction();
    }
    table t_const_default {
        key = { hdr.ethernet.srcAddr: exact; }
        actions = { set_port; drop; }
        const default_action = drop();
    }
    table t_lpm {
        key = { hdr.ipv4.dstAddr: lpm; }
        actions = { set_port_metered; NoAction; }
        default_action = NoAction();
        meters = t_lpm_meter;
    }
    table t_ternary {
        key = { hdr.ipv4.srcAddr: ternary; hdr.ipv4.protocol: exact; }
        actions = { set_port; NoAction; }
        default_action = NoAction();
    }
    table t_range {
        key = { hdr.ipv4.totalLen: range; }
        actions = { set_port; NoAction; }
        default_action = NoAction();
    }
    table t_optional {
        key = { hdr.ipv4.diffserv: optional; hdr.ipv4.ttl: exact; }
        actions = { set_port; NoAction; }
        default_action = NoAction();
    }
    table t_idle {
        key = { hdr.ipv4.protocol: exact; }
        actions = { NoAction; drop; }
        default_action = NoAction();
        support_timeout = true;
    }
    table t_profile {
        key = { hdr.ethernet.srcAddr: exact; }
        actions = { set_dmac; NoAction; }
        implementation = dmac_profile;
    }
    table t_selector {
        key = { hdr.ethernet.etherType: exact; hdr.ipv4.srcAddr: selector; }
        actions = { set_port; NoAction; }
        implementation = port_selector;
    }

    apply {
        if (hdr.packet_out.isValid()) {
            if (hdr.packet_out.egress_port == 0) {
                standard_metadata.egress_spec = CPU_PORT;
            } else {
                standard_metadata.egress_spec = hdr.packet_out.egress_port;
            }
            hdr.packet_out.setInvalid();
            digest<learn_t>(1, {8w11, standard_metadata.ingress_port});
        } else {
            t_const_entries.apply();
            t_const_default.apply();
            t_exact.apply();
            if (hdr.ipv4.isValid()) {
                t_lpm.apply();
                t_ternary.apply();
                t_range.apply();
                t_optional.apply();
                t_idle.apply();
            }
            t_profile.apply();
            t_selector.apply();
            port_counter.count((bit<32>)standard_metadata.ingress_port);
            port_meter.execute_meter((bit<32>)standard_metadata.ingress_port, meta.color);
            reg.write((bit<32>)standard_metadata.ingress_port, 8w1);
        }
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = standard_metadata.ingress_port;
            hdr.packet_in._pad = 0;
        }
    }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.packet_in);
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
