// Bit slices read: nibbles of a byte, a slice across the byte boundary of a bit<16>, single bits.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  a;
    bit<16> w;
    bit<4>  hi;
    bit<4>  lo;
    bit<8>  mid;
    bit<1>  top;
    bit<7>  rest;
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
        hdr.h.hi = hdr.h.a[7:4];
        hdr.h.lo = hdr.h.a[3:0];
        hdr.h.mid = hdr.h.w[11:4];
        hdr.h.top = hdr.h.w[15:15];
        hdr.h.rest = hdr.h.w[6:0];
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
