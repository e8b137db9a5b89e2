// recirculate_preserving_field_list(1) in egress: the deparsed packet (with
// the egress changes) re-enters the parser and ingress with instance_type 4
// and only @field_list(1) metadata preserved; the first copy is not
// transmitted. After the second ingress pass the packet is unicast, so its
// egress sees instance_type 0 again.

#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  k;
    bit<8>  ing_itype;
    bit<8>  eg_itype;
    bit<8>  kept;
    bit<8>  lost;
    bit<8>  passes;
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
        hdr.h.ing_itype = (bit<8>) standard_metadata.instance_type;
        hdr.h.kept = meta.kept;
        hdr.h.lost = meta.lost;
        meta.kept = 0x6B;
        meta.lost = 0x1C;
        standard_metadata.egress_spec = 3;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply {
        hdr.h.passes = hdr.h.passes + 1;
        hdr.h.eg_itype = (bit<8>) standard_metadata.instance_type;
        if (hdr.h.passes == 1) {
            recirculate_preserving_field_list(8w1);
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
