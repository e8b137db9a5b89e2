// Copy-in/copy-out: the same field passed to two inout parameters is copied out left to right;
// a global read inside the action sees the value before copy-out; swap through inout.
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
    action set_both(inout bit<8> x, inout bit<8> y) {
        x = 1;
        y = 2;
    }
    action bump_then_read(inout bit<8> x) {
        x = x + 1;
        hdr.h.c = hdr.h.b;
    }
    action swap(inout bit<8> x, inout bit<8> y) {
        bit<8> t = x;
        x = y;
        y = t;
    }
    apply {
        set_both(hdr.h.a, hdr.h.a);
        bump_then_read(hdr.h.b);
        swap(hdr.h.d, hdr.h.e);
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
