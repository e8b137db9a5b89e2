// The deparser emits headers in emit-call order (here the reverse of parse order) and skips
// invalid ones; unparsed bytes follow.
#include <core.p4>
#include <v1model.p4>

header base_t {
    bit<8> kind;
    bit<8> v;
}
header x_t {
    bit<16> x;
}
header y_t {
    bit<8> y;
}
struct headers_t {
    base_t base;
    x_t    x;
    y_t    y;
}
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.base);
        transition select(hdr.base.kind) {
            1: parse_x;
            2: parse_y;
            3: parse_xy;
            default: accept;
        }
    }
    state parse_x {
        pkt.extract(hdr.x);
        transition accept;
    }
    state parse_y {
        pkt.extract(hdr.y);
        transition accept;
    }
    state parse_xy {
        pkt.extract(hdr.x);
        pkt.extract(hdr.y);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
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
        pkt.emit(hdr.y);
        pkt.emit(hdr.x);
        pkt.emit(hdr.base);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
