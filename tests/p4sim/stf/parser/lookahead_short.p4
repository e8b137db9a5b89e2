// A lookahead<bit<16>>() in a select key with only one byte left raises PacketTooShort;
// the packet continues to ingress and the byte is re-emitted.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> status;
    bit<8> w_valid;
}
header w_t {
    bit<16> w;
}
struct headers_t {
    h_t h;
    w_t w;
}
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.h);
        transition select(pkt.lookahead<bit<16>>()) {
            0xABCD: parse_w;
            default: accept;
        }
    }
    state parse_w {
        pkt.extract(hdr.w);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.parser_error == error.PacketTooShort) {
            hdr.h.status = 0x10;
        }
        hdr.h.w_valid = hdr.w.isValid() ? 8w1 : 8w0;
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
        pkt.emit(hdr.w);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
