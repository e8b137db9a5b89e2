// Bitwise & | ^ ~ on bit<8>, boolean && || !, and the conditional operator ?:.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> and_ab;
    bit<8> or_ab;
    bit<8> xor_ab;
    bit<8> not_a;
    bit<8> max_ab;
    bit<8> logic;
}
struct headers_t { h_t h; }
struct meta_t { }

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
    apply {
        hdr.h.and_ab = hdr.h.a & hdr.h.b;
        hdr.h.or_ab = hdr.h.a | hdr.h.b;
        hdr.h.xor_ab = hdr.h.a ^ hdr.h.b;
        hdr.h.not_a = ~hdr.h.a;
        hdr.h.max_ab = hdr.h.a > hdr.h.b ? hdr.h.a : hdr.h.b;
        bit<8> l = 0;
        if (hdr.h.a != 0 && hdr.h.b != 0) { l = l | 1; }
        if (hdr.h.a == 0 || hdr.h.b == 0) { l = l | 2; }
        if (!(hdr.h.a == hdr.h.b)) { l = l | 4; }
        hdr.h.logic = l;
        standard_metadata.egress_spec = 1;
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
