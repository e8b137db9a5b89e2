// switch on apply().action_run: each action label runs its own branch, the
// default label covers the default action (NoAction) on a miss.

#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  k;
    bit<8>  r1;
    bit<16> r2;
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
    action a1() {
        hdr.h.r1 = 1;
    }
    action a2(bit<8> v) {
        hdr.h.r1 = v;
    }
    table t {
        key = { hdr.h.k : exact; }
        actions = { a1; a2; NoAction; }
        default_action = NoAction();
    }
    apply {
        switch (t.apply().action_run) {
            a1: {
                standard_metadata.egress_spec = 1;
            }
            a2: {
                standard_metadata.egress_spec = 2;
                hdr.h.r2 = 0x0202;
            }
            default: {
                standard_metadata.egress_spec = 3;
            }
        }
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
