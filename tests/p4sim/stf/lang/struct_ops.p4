// Structs: list and named initialisers, assignment copies (no aliasing), == and != on structs.
#include <core.p4>
#include <v1model.p4>

struct pair_t {
    bit<8> x;
    bit<8> y;
}
header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> qx;
    bit<8> qy;
    bit<8> flags;
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
        pair_t p = { hdr.h.a, hdr.h.b };
        pair_t q = p;
        q.x = q.x + 1;
        pair_t r = { x = hdr.h.a, y = hdr.h.b };
        bit<8> f = 0;
        if (p == q) { f = f | 1; }
        if (p != q) { f = f | 2; }
        pair_t p2 = { hdr.h.a, hdr.h.b };
        if (p == p2) { f = f | 4; }
        if (r == p) { f = f | 8; }
        hdr.h.qx = q.x;
        hdr.h.qy = q.y;
        hdr.h.flags = f;
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
