// select on a bit slice of a field together with a boolean expression.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> flags;
    bit<8> a;
    bit<8> b;
    bit<8> path;
}
struct headers_t { h_t h; }
struct meta_t {
    bit<8> path;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.flags[7:6], hdr.h.a == hdr.h.b) {
            (2w3, true): p1;
            (2w3, false): p2;
            (2w1, _): p3;
            default: p4;
        }
    }
    state p1 {
        meta.path = 1;
        transition accept;
    }
    state p2 {
        meta.path = 2;
        transition accept;
    }
    state p3 {
        meta.path = 3;
        transition accept;
    }
    state p4 {
        meta.path = 4;
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        hdr.h.path = meta.path;
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
