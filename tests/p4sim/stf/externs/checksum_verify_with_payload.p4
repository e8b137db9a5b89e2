// verify_checksum_with_payload with csum16 over two fields plus the payload:
// checksum_error is 0 for a correct value, 1 for a wrong one; ingress
// copies the flag into the header byte b.

#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<16> a;
    bit<8>  b;
    bit<16> csum;
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
    apply {
        verify_checksum_with_payload(true, { hdr.h.a, hdr.h.b },
            hdr.h.csum, HashAlgorithm.csum16);
    }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        hdr.h.b = (bit<8>) standard_metadata.checksum_error;
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
