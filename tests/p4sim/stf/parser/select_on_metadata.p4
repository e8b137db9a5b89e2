// select on a metadata field computed in an earlier parser state.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> path;
}
header t_t {
    bit<8> v;
}
struct headers_t {
    h_t h;
    t_t t;
}
struct meta_t {
    bit<2> cls;
    bit<8> path;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.h);
        meta.cls = hdr.h.a[1:0];
        transition classify;
    }
    state classify {
        transition select(meta.cls) {
            3: parse_t;
            default: no_t;
        }
    }
    state parse_t {
        meta.path = 1;
        pkt.extract(hdr.t);
        transition accept;
    }
    state no_t {
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
        if (hdr.t.isValid()) {
            hdr.t.v = hdr.t.v + 1;
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
        pkt.emit(hdr.t);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
