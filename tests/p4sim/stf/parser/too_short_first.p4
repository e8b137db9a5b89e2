// A packet shorter than the first header: no header is valid, ingress still runs and adds a
// report header; the whole original packet follows it unchanged.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<32> v;
}
header rep_t {
    bit<8> too_short;
    bit<8> h_valid;
}
struct headers_t {
    rep_t rep;
    h_t   h;
}
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
        hdr.rep.setValid();
        hdr.rep.too_short = standard_metadata.parser_error == error.PacketTooShort ? 8w1 : 8w0;
        hdr.rep.h_valid = hdr.h.isValid() ? 8w1 : 8w0;
        if (hdr.h.isValid()) {
            hdr.h.v = hdr.h.v + 1;
        }
        standard_metadata.egress_spec = 4;
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
        pkt.emit(hdr.rep);
        pkt.emit(hdr.h);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
