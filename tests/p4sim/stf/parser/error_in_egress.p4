// standard_metadata.parser_error set by a failed verify is visible in ingress and still in egress.
#include <core.p4>
#include <v1model.p4>

error { Unsupported }

header h_t {
    bit<8> flag;
    bit<8> seen_ingress;
    bit<8> seen_egress;
}
struct headers_t { h_t h; }
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.h);
        verify(hdr.h.flag == 1, error.Unsupported);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.parser_error == error.Unsupported) {
            hdr.h.seen_ingress = 0x51;
        }
        standard_metadata.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.parser_error == error.Unsupported) {
            hdr.h.seen_egress = 0x52;
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
