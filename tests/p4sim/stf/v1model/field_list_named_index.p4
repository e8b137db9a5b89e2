// @field_list takes compile-time constants, not only literals: a named constant as the
// index of a resubmit field list preserves the field.
#include <core.p4>
#include <v1model.p4>

const bit<8> FL_RESUBMIT = 3;

header h_t {
    bit<8> pass;
    bit<8> kept;
}
struct headers_t { h_t h; }
struct meta_t {
    @field_list(FL_RESUBMIT) bit<8> kept;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.instance_type == 0) {
            meta.kept = 0x5A;
            resubmit_preserving_field_list((bit<8>)FL_RESUBMIT);
        } else {
            hdr.h.pass = 2;
            hdr.h.kept = meta.kept;
            standard_metadata.egress_spec = 1;
        }
    }
}
control MyEgress(inout headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t standard_metadata) { apply { } }
control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
