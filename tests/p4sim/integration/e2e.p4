/* The test program of test_p4runtime_e2e.py: every packet enters from the CPU port
 * (PacketOut) and goes back to it (PacketIn), after one table of each match kind, an
 * indirect counter, a direct counter, a meter, a register read, and optionally
 * multicast, an I2E clone and a digest chosen by the packet_out metadata.
 * The result of each lookup is written into the probe header, so one PacketIn shows
 * the effect of every table. */
#include <core.p4>
#include <v1model.p4>

const bit<9> CPU_PORT = 255;

@controller_header("packet_out")
header packet_out_t {
    bit<16> mcast_grp;       /* != 0: multicast to this group */
    bit<8>  clone_session;   /* != 0: clone I2E to this session */
    bit<8>  do_digest;       /* != 0: send a learn_t digest */
}

@controller_header("packet_in")
header packet_in_t {
    bit<9>  ingress_port;
    bit<16> egress_rid;
    bit<32> instance_type;
    bit<7>  _pad;
}

header probe_t {
    bit<8>  k_exact;
    bit<32> k_lpm;
    bit<16> k_ternary;
    bit<16> k_range;
    bit<8>  k_optional;
    bit<8>  r_exact;
    bit<8>  r_lpm;
    bit<8>  r_ternary;
    bit<8>  r_range;
    bit<8>  r_optional;
    bit<32> r_register;
}

struct learn_t { bit<8> k_exact; bit<32> k_lpm; }

struct headers { packet_out_t packet_out; packet_in_t packet_in; probe_t probe; }
struct metadata { bit<8> idx; }

parser EParser(packet_in pkt, out headers hdr, inout metadata meta,
               inout standard_metadata_t sm) {
    state start {
        transition select(sm.ingress_port) { CPU_PORT: parse_packet_out; default: parse_probe; }
    }
    state parse_packet_out { pkt.extract(hdr.packet_out); transition parse_probe; }
    state parse_probe { pkt.extract(hdr.probe); transition accept; }
}

control EVerify(inout headers hdr, inout metadata meta) { apply { } }

control EIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    counter(16, CounterType.packets_and_bytes) probe_counter;
    direct_counter(CounterType.packets_and_bytes) exact_counter;
    meter(16, MeterType.packets) probe_meter;
    register<bit<32>>(16) probe_register;

    action set_exact(bit<8> v) { hdr.probe.r_exact = v; }
    action set_lpm(bit<8> v) { hdr.probe.r_lpm = v; }
    action set_ternary(bit<8> v) { hdr.probe.r_ternary = v; }
    action set_range(bit<8> v) { hdr.probe.r_range = v; }
    action set_optional(bit<8> v) { hdr.probe.r_optional = v; }

    table t_exact {
        key = { hdr.probe.k_exact: exact; }
        actions = { set_exact; NoAction; }
        default_action = NoAction();
        counters = exact_counter;
        size = 64;
    }
    table t_lpm {
        key = { hdr.probe.k_lpm: lpm; }
        actions = { set_lpm; NoAction; }
        default_action = NoAction();
        size = 64;
    }
    table t_ternary {
        key = { hdr.probe.k_ternary: ternary; }
        actions = { set_ternary; NoAction; }
        default_action = NoAction();
        size = 64;
    }
    table t_range {
        key = { hdr.probe.k_range: range; }
        actions = { set_range; NoAction; }
        default_action = NoAction();
        size = 64;
    }
    table t_optional {
        key = { hdr.probe.k_optional: optional; hdr.probe.k_exact: exact; }
        actions = { set_optional; NoAction; }
        default_action = NoAction();
        size = 64;
    }

    apply {
        if (!hdr.probe.isValid()) {
            mark_to_drop(sm);
            exit;
        }
        meta.idx = hdr.probe.k_exact & 8w15;
        probe_counter.count((bit<32>)meta.idx);
        bit<32> color;
        probe_meter.execute_meter((bit<32>)meta.idx, color);
        probe_register.read(hdr.probe.r_register, (bit<32>)meta.idx);
        t_exact.apply();
        t_lpm.apply();
        t_ternary.apply();
        t_range.apply();
        t_optional.apply();
        sm.egress_spec = CPU_PORT;
        if (hdr.packet_out.isValid()) {
            if (hdr.packet_out.mcast_grp != 0) {
                sm.mcast_grp = hdr.packet_out.mcast_grp;
            }
            if (hdr.packet_out.clone_session != 0) {
                clone(CloneType.I2E, (bit<32>)hdr.packet_out.clone_session);
            }
            if (hdr.packet_out.do_digest != 0) {
                digest<learn_t>(1, {hdr.probe.k_exact, hdr.probe.k_lpm});
            }
        }
    }
}

control EEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        hdr.packet_out.setInvalid();
        if (sm.egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = sm.ingress_port;
            hdr.packet_in.egress_rid = sm.egress_rid;
            hdr.packet_in.instance_type = sm.instance_type;
        }
    }
}

control EComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }

control EDeparser(packet_out pkt, in headers hdr) {
    apply { pkt.emit(hdr.packet_in); pkt.emit(hdr.probe); }
}

V1Switch(EParser(), EVerify(), EIngress(), EEgress(), EComputeChecksum(), EDeparser()) main;
