// Generic parser and control declarations instantiated with concrete types: one generic
// sub-parser peeks at the packet at two widths (lookahead<T>), a generic control with a
// local of type T and an action copies a value of either width. (p4c type-checks a generic
// body with T abstract, so arithmetic on T, a table keyed on T and extract() or emit() of
// a T are refused: see tests/p4sim/test_check_errors.py.)
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
    bit<8>  first8;
    bit<24> first24;
}

parser Peek<T>(packet_in pkt, out T v) {
    state start {
        v = pkt.lookahead<T>();
        transition accept;
    }
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    Peek<bit<8>>() peek8;
    Peek<bit<24>>() peek24;
    state start {
        peek8.apply(pkt, meta.first8);
        peek24.apply(pkt, meta.first24);
        pkt.extract(hdr.h);
        transition select(hdr.h.a) {
            1: tag;
            default: accept;
        }
    }
    state tag {
        pkt.extract(hdr.t);
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
        remember8.apply(meta.first8, hdr.h.old_a);            // a, as peeked
        remember16.apply(meta.first24[15:0], hdr.h.old_w);    // w, as peeked
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
