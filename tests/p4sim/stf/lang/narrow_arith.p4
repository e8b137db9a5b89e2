// Arithmetic on narrow, non-byte-aligned fields: bit<3> and bit<1> wrap (7+1 = 0, 2-3 = 7,
// 1+1 = 0) and ~ on bit<1>; fields packed inside two bytes.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<3> a;
    bit<3> b;
    bit<1> x;
    bit<1> y;
    bit<3> sum;
    bit<3> diff;
    bit<1> xy_sum;
    bit<1> x_not;
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
        hdr.h.xy_sum = hdr.h.x + hdr.h.y;
        hdr.h.x_not = ~hdr.h.x;
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
