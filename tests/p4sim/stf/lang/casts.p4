// Casts: bit<16>->bit<8> truncates, bit<8>->bit<16> zero-extends, int<8>->int<16> sign-extends,
// int<16>->bit<16> keeps bits, bit<8>->int<8>, bool->bit<1> and bit<1>->bool.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<16> w;
    int<8>  s;
    bit<8>  b;
    bit<8>  trunc8;
    bit<16> zext16;
    bit<16> sext16;
    int<8>  as_int;
    bit<8>  flags;
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
        hdr.h.trunc8 = (bit<8>)hdr.h.w;
        hdr.h.zext16 = (bit<16>)hdr.h.b;
        hdr.h.sext16 = (bit<16>)(int<16>)hdr.h.s;
        hdr.h.as_int = (int<8>)hdr.h.b;
        bit<1> big = (bit<1>)(hdr.h.b > 100);
        bool odd = (bool)hdr.h.w[0:0];
        hdr.h.flags = (bit<8>)big + (odd ? 8w2 : 8w0);
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
