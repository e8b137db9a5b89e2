// Comparisons on int<8> are signed; the same bits compared as bit<8> are unsigned.
#include <core.p4>
#include <v1model.p4>

header h_t {
    int<8> a;
    int<8> b;
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
        bit<8> f = 0;
        if (hdr.h.a < hdr.h.b) { f = f | 0x01; }
        if (hdr.h.a <= hdr.h.b) { f = f | 0x02; }
        if (hdr.h.a > hdr.h.b) { f = f | 0x04; }
        if (hdr.h.a >= hdr.h.b) { f = f | 0x08; }
        if (hdr.h.a == hdr.h.b) { f = f | 0x10; }
        if (hdr.h.a != hdr.h.b) { f = f | 0x20; }
        if ((bit<8>)hdr.h.a < (bit<8>)hdr.h.b) { f = f | 0x40; }
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
