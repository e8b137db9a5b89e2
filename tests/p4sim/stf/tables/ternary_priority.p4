// Ternary match with overlapping entries installed from STF with explicit
// priorities. In STF (as in P4Runtime) the larger priority number wins,
// independent of the order in which the entries were added.

#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<16> k;
    bit<8>  r1;
    bit<8>  r2;
}

struct headers_t {
    h_t h;
}

struct meta_t {
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    action set_out(bit<9> port, bit<8> val) {
        standard_metadata.egress_spec = port;
        hdr.h.r1 = val;
    }
    table t {
        key = { hdr.h.k : ternary; }
        actions = { set_out; NoAction; }
        default_action = NoAction();
    }
    apply {
        t.apply();
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply { }
}

control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
