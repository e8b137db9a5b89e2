// A sub-parser invoked with apply() from parser states: out header and inout counter parameters
// are copied back to the caller; two instances of the same sub-parser.
#include <core.p4>
#include <v1model.p4>

header base_t {
    bit<8> count;
}
header inner_t {
    bit<8> more;
    bit<8> v;
}
struct headers_t {
    base_t  base;
    inner_t in1;
    inner_t in2;
}
struct meta_t {
    bit<8> count;
}

parser InnerParser(packet_in pkt, out inner_t x, inout bit<8> count) {
    state start {
        pkt.extract(x);
        count = count + 1;
        transition accept;
    }
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    InnerParser() first;
    InnerParser() second;

    state start {
        pkt.extract(hdr.base);
        meta.count = 0;
        first.apply(pkt, hdr.in1, meta.count);
        transition select(hdr.in1.more) {
            1: parse_second;
            default: accept;
        }
    }
    state parse_second {
        second.apply(pkt, hdr.in2, meta.count);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        hdr.base.count = meta.count;
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
        pkt.emit(hdr.in1);
        pkt.emit(hdr.in2);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
