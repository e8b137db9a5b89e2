// select on a tuple of fields (12, 4 and 8 bits) with exact values, _ wildcards and per-field masks.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<12> ident;
    bit<4>  pri;
    bit<8>  proto;
    bit<8>  path;
}
struct headers_t { h_t h; }
struct meta_t {
    bit<8> path;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.ident, hdr.h.pri, hdr.h.proto) {
            (12w0x123, 4w1, 8w6): path1;
            (12w0x123, _, 8w17): path2;
            (12w0x100 &&& 12w0xF00, 4w8 &&& 4w8, _): path3;
            default: path4;
        }
    }
    state path1 {
        meta.path = 1;
        transition accept;
    }
    state path2 {
        meta.path = 2;
        transition accept;
    }
    state path3 {
        meta.path = 3;
        transition accept;
    }
    state path4 {
        meta.path = 4;
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
