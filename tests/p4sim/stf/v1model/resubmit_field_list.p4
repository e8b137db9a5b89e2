// resubmit_preserving_field_list(1): the packet re-enters the parser and
// ingress with its original bytes (first-pass header changes are discarded),
// instance_type 6 in ingress, @field_list(1) metadata preserved and other
// metadata reset.

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
        if (standard_metadata.instance_type == 0) {
            meta.kept = 0x5E;
            meta.lost = 0x10;
            hdr.h.k = 0xEE;
            resubmit_preserving_field_list(8w1);
        } else {
            hdr.h.itype = (bit<8>) standard_metadata.instance_type;
            hdr.h.kept = meta.kept;
            hdr.h.lost = meta.lost;
            standard_metadata.egress_spec = 2;
        }
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
