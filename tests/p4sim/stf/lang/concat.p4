// Concatenation ++: widths add up, the left operand is the most significant part.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  a;
    bit<4>  n1;
    bit<4>  n2;
    bit<16> ab;
    bit<12> na;
    bit<4>  n1copy;
    bit<24> aba;
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
        hdr.h.ab = hdr.h.a ++ hdr.h.n1 ++ hdr.h.n2;
        hdr.h.na = hdr.h.n2 ++ hdr.h.a;
        hdr.h.n1copy = hdr.h.n1;
        hdr.h.aba = hdr.h.ab ++ hdr.h.a;
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
