// Test program of the switch process tests: port 1 <-> port 2 forwarding, the queue
// priority taken from a test header, queueing metadata written back into it in egress,
// dst 00:00:00:00:00:cc sent to the CPU port (64), EtherType 0x9999 sends a digest.
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> etype; }
header qm_t {
    bit<8>  prio;
    bit<32> enq_qdepth;
    bit<32> deq_qdepth;
    bit<32> deq_timedelta;
    bit<32> enq_timestamp;
    bit<16> in_port;
}
struct headers_t { eth_t eth; qm_t qm; }
struct learn_t { bit<48> src; bit<9> port; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.etype) { 0x88B5: parse_qm; default: accept; }
    }
    state parse_qm { pkt.extract(hdr.qm); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t m) { apply { } }

control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (sm.ingress_port == 1) { sm.egress_spec = 2; } else { sm.egress_spec = 1; }
        if (hdr.eth.dst == 0x0000000000cc) { sm.egress_spec = 64; }
        if (hdr.qm.isValid()) {
            sm.priority = hdr.qm.prio[2:0];
            hdr.qm.in_port = (bit<16>) sm.ingress_port;
        }
        if (hdr.eth.etype == 0x9999) {
            digest<learn_t>(1, { hdr.eth.src, sm.ingress_port });
        }
    }
}

control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (hdr.qm.isValid()) {
            hdr.qm.enq_qdepth = (bit<32>) sm.enq_qdepth;
            hdr.qm.deq_qdepth = (bit<32>) sm.deq_qdepth;
            hdr.qm.deq_timedelta = sm.deq_timedelta;
            hdr.qm.enq_timestamp = sm.enq_timestamp;
        }
    }
}

control CC(inout headers_t hdr, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.qm); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
