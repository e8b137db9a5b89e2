/* Test program of test_p4rt_client.py: every PacketOut goes back to the CPU as a
 * PacketIn after an exact, an lpm, a ternary and a range table, each of which writes its
 * result into the probe header; an indirect counter counts by key, a register cell is
 * read into the probe, and a digest is sent when the probe asks for one. */
#include <core.p4>
#include <v1model.p4>

const bit<9> CPU_PORT = 255;

@controller_header("packet_out")
header packet_out_t { bit<9> egress_port; bit<7> pad; }

@controller_header("packet_in")
header packet_in_t { bit<9> ingress_port; bit<7> reason; }

header probe_t {
    bit<8>  key8;
    bit<32> addr;
    bit<16> port;
    bit<8>  want_digest;
    bit<8>  r_exact;
    bit<8>  r_lpm;
    bit<8>  r_ternary;
    bit<8>  r_range;
    bit<32> r_register;
}

struct note_t { bit<8> key8; bit<32> addr; bit<16> port; }
struct headers { packet_out_t packet_out; packet_in_t packet_in; probe_t probe; }
struct metadata { bit<8> unused; }

parser PParser(packet_in pkt, out headers hdr, inout metadata meta,
               inout standard_metadata_t sm) {
    state start {
        transition select(sm.ingress_port) { CPU_PORT: parse_packet_out; default: parse_probe; }
    }
    state parse_packet_out { pkt.extract(hdr.packet_out); transition parse_probe; }
    state parse_probe { pkt.extract(hdr.probe); transition accept; }
}

control PVerify(inout headers hdr, inout metadata meta) { apply { } }

control PIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    counter(16, CounterType.packets_and_bytes) by_key;
    register<bit<32>>(16) cells;

    action set_exact(bit<8> v) { hdr.probe.r_exact = v; }
    action set_lpm(bit<8> v) { hdr.probe.r_lpm = v; }
    action set_ternary(bit<8> v) { hdr.probe.r_ternary = v; }
    action set_range(bit<8> v) { hdr.probe.r_range = v; }

    table t_exact {
        key = { hdr.probe.key8: exact; }
        actions = { set_exact; NoAction; }
        default_action = NoAction();
    }
    table t_lpm {
        key = { hdr.probe.addr: lpm; }
        actions = { set_lpm; NoAction; }
        default_action = NoAction();
    }
    table t_ternary {
        key = { hdr.probe.addr: ternary; }
        actions = { set_ternary; NoAction; }
        default_action = NoAction();
    }
    table t_range {
        key = { hdr.probe.port: range; }
        actions = { set_range; NoAction; }
        default_action = NoAction();
    }

    apply {
        if (!hdr.probe.isValid()) { mark_to_drop(sm); exit; }
        bit<32> idx = (bit<32>)(hdr.probe.key8 & 8w15);
        by_key.count(idx);
        cells.read(hdr.probe.r_register, idx);
        t_exact.apply();
        t_lpm.apply();
        t_ternary.apply();
        t_range.apply();
        if (hdr.probe.want_digest != 0) {
            digest<note_t>(1, {hdr.probe.key8, hdr.probe.addr, hdr.probe.port});
        }
        sm.egress_spec = CPU_PORT;
    }
}

control PEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        hdr.packet_out.setInvalid();
        hdr.packet_in.setValid();
        hdr.packet_in.ingress_port = sm.ingress_port;
        hdr.packet_in.reason = 7w5;
    }
}

control PComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }

control PDeparser(packet_out pkt, in headers hdr) {
    apply { pkt.emit(hdr.packet_in); pkt.emit(hdr.probe); }
}

V1Switch(PParser(), PVerify(), PIngress(), PEgress(), PComputeChecksum(), PDeparser()) main;
