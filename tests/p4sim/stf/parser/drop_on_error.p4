// The usual v1model pattern: ingress drops packets whose parser_error is not NoError
// (truncated packet, failed verify); good packets are forwarded.
#include <core.p4>
#include <v1model.p4>

error { BadType }

header h_t {
    bit<8> type;
    bit<8> pad;
}
header p_t {
    bit<32> v;
}
struct headers_t {
    h_t h;
    p_t p;
}
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.h);
        verify(hdr.h.type == 8, error.BadType);
        pkt.extract(hdr.p);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.parser_error != error.NoError) {
            mark_to_drop(standard_metadata);
            return;
        }
        hdr.p.v = hdr.p.v + 1;
        standard_metadata.egress_spec = 2;
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
        pkt.emit(hdr.p);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
