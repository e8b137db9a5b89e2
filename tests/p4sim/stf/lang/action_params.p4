// Actions called directly: directionless parameters bound to constants, inout/in/out parameters;
// a later call sees the copy-out of an earlier one.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> c;
    bit<8> d;
    bit<8> e;
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
    action set_cd(bit<8> x, bit<8> y) {
        hdr.h.c = x;
        hdr.h.d = y;
    }
    action add_to(inout bit<8> acc, in bit<8> v) {
        acc = acc + v;
    }
    action get_sum(in bit<8> x, in bit<8> y, out bit<8> s) {
        s = x + y;
    }
    apply {
        set_cd(7, 9);
        add_to(hdr.h.a, hdr.h.b);
        get_sum(hdr.h.a, 3, hdr.h.e);
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
