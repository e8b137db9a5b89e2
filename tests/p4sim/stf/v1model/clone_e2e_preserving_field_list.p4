// clone_preserving_field_list(E2E, session, 1) in egress: the egress clone
// keeps @field_list(1) metadata and loses the rest, and sees
// instance_type 2.

#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  k;
    bit<8>  itype;
    bit<8>  kept;
    bit<8>  lost;
}

struct headers_t {
    h_t h;
}

struct meta_t {
    @field_list(1)
    bit<8> kept;
    bit<8> lost;
}

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
        meta.kept = 0x44;
        meta.lost = 0x55;
        standard_metadata.egress_spec = 3;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply {
        hdr.h.itype = (bit<8>) standard_metadata.instance_type;
        hdr.h.kept = meta.kept;
        hdr.h.lost = meta.lost;
        if (standard_metadata.instance_type == 0) {
            clone_preserving_field_list(CloneType.E2E, 32w4, 8w1);
        }
    }
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
