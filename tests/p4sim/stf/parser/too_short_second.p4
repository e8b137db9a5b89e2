// A packet too short for the second header: parser_error is PacketTooShort, the first header stays
// valid, the second is invalid, and the leftover bytes are re-emitted after the first header.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> status;
}
header t_t {
    bit<32> v;
}
struct headers_t {
    h_t h;
    t_t t;
}
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.h);
        pkt.extract(hdr.t);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        bit<8> s = 0;
        if (standard_metadata.parser_error == error.PacketTooShort) { s = s | 0x10; }
        if (hdr.h.isValid()) { s = s | 0x01; }
        if (hdr.t.isValid()) { s = s | 0x02; }
        hdr.h.status = s;
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
        pkt.emit(hdr.t);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
