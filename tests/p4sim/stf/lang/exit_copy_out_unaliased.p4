// exit in a control applied from ingress, with arguments that do not alias (hdr and
// meta.m): p4c's inliner substitutes them, so the writes before exit stay (b = 0xEE, and
// x = 0x77 reaches meta.m, which egress shows in e); the rest of ingress is skipped.
// With aliasing arguments the inliner copies them and exit drops the copy-out
// (copy_in_out_composites, case 7). Both checked on BMv2 with p4c's STF runner.
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
struct meta_t { bit<8> m; }

control Inner(inout headers_t hdr, inout bit<8> x) {
    apply {
        if (hdr.h.c == 1) {
            hdr.h.b = 0xEE; x = 0x77;
            exit;
        }
        hdr.h.b = 0x11;
    }
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
    Inner() inner;
    apply {
        standard_metadata.egress_spec = 1;
        hdr.h.a = 0xA1;
        inner.apply(hdr, meta.m);
        hdr.h.d = 0x44;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply {
        hdr.h.e = meta.m;
    }
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
