// Header assignment copies the validity bit and all fields; assigning an invalid header makes
// the destination invalid (so it is not emitted).
#include <core.p4>
#include <v1model.p4>

header p_t {
    bit<8> x;
    bit<8> y;
}
struct headers_t {
    p_t a;
    p_t b;
    p_t c;
    p_t missing;
}
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.a);
        pkt.extract(hdr.c);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        hdr.b = hdr.a;
        hdr.b.x = hdr.b.x + 1;
        hdr.c = hdr.missing;
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
        pkt.emit(hdr.a);
        pkt.emit(hdr.b);
        pkt.emit(hdr.c);
        pkt.emit(hdr.missing);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
