// switch on a serializable enum value (cast from bit<8>) with enum member labels, fall-through
// and default (an unnamed value 9 takes default).
#include <core.p4>
#include <v1model.p4>

enum bit<8> Kind_t {
    A = 1,
    B = 2,
    C = 3
}
header h_t {
    bit<8> k;
    bit<8> r;
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
        switch ((Kind_t)hdr.h.k) {
            Kind_t.A: { hdr.h.r = 0x0A; }
            Kind_t.B:
            Kind_t.C: { hdr.h.r = 0xBC; }
            default: { hdr.h.r = 0xDD; }
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
        pkt.emit(hdr.h);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
