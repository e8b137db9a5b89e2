// Arithmetic on wide fields: bit<48> carry across 32 bits, bit<64> multiply wrap, slices and
// truncating casts of wide values.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<48> mac;
    bit<64> big;
    bit<48> mac_inc;
    bit<64> big_mul3;
    bit<32> big_hi;
    bit<16> mac_lo;
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
        hdr.h.mac_inc = hdr.h.mac + 1;
        hdr.h.big_mul3 = hdr.h.big * 3;
        hdr.h.big_hi = hdr.h.big[63:32];
        hdr.h.mac_lo = (bit<16>)hdr.h.mac;
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
