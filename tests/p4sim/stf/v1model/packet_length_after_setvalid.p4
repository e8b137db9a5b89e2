// In egress, standard_metadata.packet_length is the ingress length adjusted
// for headers made valid in ingress (BMv2 updates it on setValid()): a
// 2-byte header added in ingress makes it 2 bytes longer.

#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  k;
    bit<32> eg_len;
}

header extra_t {
    bit<16> x;
}

struct headers_t {
    h_t     h;
    extra_t extra;
}

struct meta_t {
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
        hdr.extra.setValid();
        hdr.extra.x = 0xA5A5;
        standard_metadata.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply {
        hdr.h.eg_len = standard_metadata.packet_length;
    }
}

control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
        pkt.emit(hdr.extra);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
