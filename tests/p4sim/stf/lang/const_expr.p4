// Compile-time constants: arbitrary-precision int folded then cast, width-typed wrap-around,
// negative int<8> as bits, slices and comparisons of constants, / and % on int.
#include <core.p4>
#include <v1model.p4>

const bit<16> K1 = 16w3 * 7 + (1 << 4);
const int K2 = (1 << 10) - 1;
const bit<8> K3 = (bit<8>)K2;
const bit<8> K4 = 8w200 + 8w100;
const int<8> K5 = -3;
const bit<8> K6 = (bit<8>)K5;
const bool K7 = K1 > 30;
const bit<12> K8 = 12w0xABC;
const bit<4> K9 = K8[7:4];
const int K10 = 17 % 5 + 17 / 5;
const bit<8> K11 = 8w1 << 7;

header h_t {
    bit<8>  a;
    bit<16> k1;
    bit<8>  k3;
    bit<8>  k4;
    bit<8>  k6;
    bit<8>  k7;
    bit<8>  k9;
    bit<8>  k10;
    bit<8>  k11;
    bit<8>  a_plus_k3;
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
        hdr.h.k1 = K1;
        hdr.h.k3 = K3;
        hdr.h.k4 = K4;
        hdr.h.k6 = K6;
        hdr.h.k7 = K7 ? 8w1 : 8w0;
        hdr.h.k9 = (bit<8>)K9;
        hdr.h.k10 = (bit<8>)K10;
        hdr.h.k11 = K11;
        hdr.h.a_plus_k3 = hdr.h.a + K3;
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
