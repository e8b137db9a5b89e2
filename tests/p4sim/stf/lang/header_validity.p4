// isValid/setValid/setInvalid: a header made valid in ingress is emitted, one made invalid is
// not, and the unparsed payload follows the emitted headers.
#include <core.p4>
#include <v1model.p4>

header h1_t {
    bit<8> a;
    bit<8> flags;
}
header h2_t {
    bit<8> x;
    bit<8> y;
}
struct headers_t {
    h1_t h1;
    h2_t h2;
}
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.h1);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        bit<8> f = 0;
        if (hdr.h1.isValid()) { f = f | 1; }
        if (hdr.h2.isValid()) { f = f | 2; }
        hdr.h1.flags = f;
        hdr.h2.setValid();
        hdr.h2.x = hdr.h1.a + 1;
        hdr.h2.y = hdr.h2.isValid() ? 8w0x22 : 8w0;
        if (hdr.h1.a == 0x99) {
            hdr.h1.setInvalid();
        }
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
        pkt.emit(hdr.h1);
        pkt.emit(hdr.h2);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
