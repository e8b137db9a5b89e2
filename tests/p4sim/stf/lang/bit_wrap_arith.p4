// bit<W> arithmetic wraps modulo 2^W: +, -, * on bit<8>, and a widening cast before * on bit<16>.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  a;
    bit<8>  b;
    bit<8>  sum;
    bit<8>  diff;
    bit<8>  prod;
    bit<16> wide;
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
        hdr.h.sum = hdr.h.a + hdr.h.b;
        hdr.h.diff = hdr.h.a - hdr.h.b;
        hdr.h.prod = hdr.h.a * hdr.h.b;
        hdr.h.wide = (bit<16>)hdr.h.a * 16w300 + (bit<16>)hdr.h.b;
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
