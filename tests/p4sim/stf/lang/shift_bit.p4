// Shifts on bit<W>: constant and run-time amounts, amounts >= the width give 0, left shift drops high bits.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  a;
    bit<8>  n;
    bit<8>  shl3;
    bit<8>  shr2;
    bit<8>  shl8;
    bit<8>  shln;
    bit<8>  shrn;
    bit<16> wide_shln;
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
        hdr.h.shl3 = hdr.h.a << 3;
        hdr.h.shr2 = hdr.h.a >> 2;
        hdr.h.shl8 = hdr.h.a << 8;
        hdr.h.shln = hdr.h.a << hdr.h.n;
        hdr.h.shrn = hdr.h.a >> hdr.h.n;
        hdr.h.wide_shln = (bit<16>)hdr.h.a << hdr.h.n;
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
