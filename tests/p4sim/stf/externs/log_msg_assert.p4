// log_msg (plain and with arguments), assert(true) and assume(true) have no
// effect on the packet; the statements after them still run.

#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  k;
    bit<8>  r1;
    bit<16> r2;
}

struct headers_t {
    h_t h;
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
        log_msg("packet seen");
        log_msg("k = {}, r2 = {}", { hdr.h.k, hdr.h.r2 });
        assert(hdr.h.isValid());
        assume(hdr.h.k == hdr.h.k);
        hdr.h.r1 = 0x99;
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
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
