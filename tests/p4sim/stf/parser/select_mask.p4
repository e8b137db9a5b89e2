// select with value &&& mask keysets; the first matching case wins (0x12 matches both masks).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> t;
    bit<8> path;
}
struct headers_t { h_t h; }
struct meta_t {
    bit<8> path;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.t) {
            8w0x10 &&& 8w0xF0: high_one;
            8w0x02 &&& 8w0x0F: low_two;
            default: accept;
        }
    }
    state high_one {
        meta.path = 1;
        transition accept;
    }
    state low_two {
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
