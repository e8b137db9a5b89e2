// lookahead<bit<8>>() in a select key and into metadata: peeks without consuming bytes.
#include <core.p4>
#include <v1model.p4>

header base_t {
    bit<8> which;
    bit<8> peeked;
}
header one_t {
    bit<8> tag;
    bit<8> v;
}
header two_t {
    bit<8>  tag;
    bit<16> v;
}
struct headers_t {
    base_t base;
    one_t  one;
    two_t  two;
}
struct meta_t {
    bit<8> peeked;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.base);
        meta.peeked = pkt.lookahead<bit<8>>();
        transition select(pkt.lookahead<bit<8>>()) {
            1: parse_one;
            2: parse_two;
            default: accept;
        }
    }
    state parse_one {
        pkt.extract(hdr.one);
        transition accept;
    }
    state parse_two {
        pkt.extract(hdr.two);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        bit<8> w = 0;
        if (hdr.one.isValid()) { w = 1; }
        if (hdr.two.isValid()) { w = 2; }
        hdr.base.which = w;
        hdr.base.peeked = meta.peeked;
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
        pkt.emit(hdr.base);
        pkt.emit(hdr.one);
        pkt.emit(hdr.two);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
