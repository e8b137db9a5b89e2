// Parser-local variables: computed from header fields (with wrap-around), used as a select key,
// and copied to metadata for ingress.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> sum;
    bit<8> path;
}
struct headers_t { h_t h; }
struct meta_t {
    bit<8> sum;
    bit<8> path;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    bit<8> total;

    state start {
        pkt.extract(hdr.h);
        total = hdr.h.a + hdr.h.b;
        meta.sum = total;
        transition select(total) {
            0: wrapped;
            default: other;
        }
    }
    state wrapped {
        meta.path = 1;
        transition accept;
    }
    state other {
        meta.path = 2;
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        hdr.h.sum = meta.sum;
        hdr.h.path = meta.path;
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
