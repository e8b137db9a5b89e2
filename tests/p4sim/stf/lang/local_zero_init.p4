// BMv2 behaviour: an uninitialised local bit<8> reads as 0 and a local header starts invalid
// (the P4 spec leaves the value unspecified; BMv2 zeroes per-packet metadata).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> uninit;
    bit<8> tmp_valid;
    bit<8> tmp_after;
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
        bit<8> x;
        h_t tmp;
        hdr.h.uninit = x;
        hdr.h.tmp_valid = tmp.isValid() ? 8w1 : 8w0;
        tmp.setValid();
        tmp.a = 0x12;
        tmp.uninit = 0;
        tmp.tmp_valid = 0;
        tmp.tmp_after = 0;
        hdr.h.tmp_after = tmp.isValid() ? tmp.a : 8w0;
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
