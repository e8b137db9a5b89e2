// int<W> arithmetic wraps in two's complement: 127+1 = -128, -(-128) = -128, sign-extending casts.
#include <core.p4>
#include <v1model.p4>

header h_t {
    int<8>  a;
    int<8>  b;
    int<8>  sum;
    int<8>  diff;
    int<8>  neg;
    int<16> wide;
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
        hdr.h.neg = -hdr.h.a;
        hdr.h.wide = (int<16>)hdr.h.a * (int<16>)hdr.h.b;
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
