// Header fields whose type is a struct of bit fields, or a typedef of one (P4_16 8.1):
// extracted, emitted and assigned as the flattened fields (p4c-bm2-ss's FlattenHeaders);
// lookahead of such a struct reads it without moving (p4c's ExpandLookahead).
#include <core.p4>
#include <v1model.p4>

struct pair_t {
    bit<4> hi;
    bit<4> lo;
}
typedef pair_t pair_alias_t;
struct nested_t {
    bit<8>  tag;
    pair_t  p;
}
header h_t {
    pair_t       a;
    pair_alias_t b;
    nested_t     n;
    bit<8>       peek;
}
struct headers_t { h_t h; }
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pair_t first = pkt.lookahead<pair_t>();
        pkt.extract(hdr.h);
        hdr.h.peek = first.hi ++ first.lo;
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        standard_metadata.egress_spec = 1;
        pair_t t = hdr.h.a;
        hdr.h.a = hdr.h.b;
        hdr.h.b = t;
        hdr.h.n.p.lo = hdr.h.n.tag[3:0];
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t standard_metadata) { apply { } }
control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
