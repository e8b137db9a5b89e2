// Generic parser and control declarations instantiated with concrete types: one generic
// sub-parser extracts two header types; a generic control with a local of type T and an
// action copies a value of either width. (p4c type-checks a generic body with T abstract,
// so arithmetic on T or a table keyed on T is refused: see tests/p4sim/test_check_errors.py.)
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  a;
    bit<16> w;
    bit<8>  old_a;
    bit<16> old_w;
}
header t_t {
    bit<8> tag;
}
struct headers_t {
    h_t h;
    t_t t;
}
struct meta_t {
    bit<8> unused;
}

parser Sub<H>(packet_in pkt, out H x) {
    state start {
        pkt.extract(x);
        transition accept;
    }
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    Sub<h_t>() sub_h;
    Sub<t_t>() sub_t;
    state start {
        sub_h.apply(pkt, hdr.h);
        transition select(hdr.h.a) {
            1: tag;
            default: accept;
        }
    }
    state tag {
        sub_t.apply(pkt, hdr.t);
        transition accept;
    }
}

control Remember<T>(in T v, out T old) {
    T saved;
    action keep() {
        saved = v;
    }
    apply {
        keep();
        old = saved;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    Remember<bit<8>>() remember8;
    Remember<bit<16>>() remember16;
    apply {
        remember8.apply(hdr.h.a, hdr.h.old_a);
        remember16.apply(hdr.h.w, hdr.h.old_w);
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
        pkt.emit(hdr.t);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
