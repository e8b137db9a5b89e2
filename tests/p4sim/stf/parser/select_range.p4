// select with lo .. hi range keysets (inclusive bounds) and default.
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
            8w0 .. 8w9: small;
            8w10 .. 8w99: medium;
            8w200 .. 8w255: large;
            default: other;
        }
    }
    state small {
        meta.path = 1;
        transition accept;
    }
    state medium {
        meta.path = 2;
        transition accept;
    }
    state large {
        meta.path = 3;
        transition accept;
    }
    state other {
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
