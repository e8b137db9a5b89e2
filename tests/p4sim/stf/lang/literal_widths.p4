// Integer literals take the width of the other operand; width-typed literals wrap:
// ~8w0, -8w1, 8w5 - 8w6, sign extension of -8s1, 32-bit wrap of 0xFFFFFFFF + a.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  a;
    bit<16> w;
    bit<8>  a_plus_1;
    bit<16> w_minus_2;
    bit<8>  not_zero;
    bit<8>  minus_one;
    bit<16> sext_minus_one;
    bit<8>  five_minus_six;
    bit<32> wrap32;
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
        hdr.h.a_plus_1 = hdr.h.a + 1;
        hdr.h.w_minus_2 = hdr.h.w - 2;
        hdr.h.not_zero = ~8w0;
        hdr.h.minus_one = -8w1;
        hdr.h.sext_minus_one = (bit<16>)(int<16>)(-8s1);
        hdr.h.five_minus_six = 8w5 - 8w6;
        hdr.h.wrap32 = 32w0xFFFFFFFF + (bit<32>)hdr.h.a;
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
