// typedef names an existing type (arithmetic allowed); type creates a new type that needs casts.
#include <core.p4>
#include <v1model.p4>

typedef bit<8> Byte_t;
type bit<16> Id_t;

header h_t {
    Byte_t  a;
    bit<16> ident;
    bit<16> sum;
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
        Byte_t one = 1;
        Id_t five = (Id_t)16w5;
        Id_t ident = (Id_t)hdr.h.ident;
        ident = (Id_t)((bit<16>)ident + (bit<16>)five);
        hdr.h.ident = (bit<16>)ident;
        hdr.h.sum = (bit<16>)ident + (bit<16>)hdr.h.a;
        hdr.h.a = hdr.h.a + one;
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
