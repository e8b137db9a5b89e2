// Tuples: a tuple<bit<8>, bit<16>> built from a list expression, fields read with constant
// indexes, assignment of a whole tuple.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  a;
    bit<16> w;
    bit<16> sum;
    bit<8>  inv;
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
        tuple<bit<8>, bit<16>> t = { hdr.h.a, hdr.h.w };
        tuple<bit<8>, bit<16>> u;
        u = t;
        hdr.h.sum = (bit<16>)u[0] + u[1];
        hdr.h.inv = t[0] ^ 0xFF;
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
