// Serializable enum bit<8> as a header field: comparisons, casts enum<->bit, an unnamed value (7).
#include <core.p4>
#include <v1model.p4>

enum bit<8> Op_t {
    ADD = 1,
    SUB = 2,
    XOR = 0x10
}
header h_t {
    Op_t   op;
    bit<8> a;
    bit<8> b;
    bit<8> r;
    bit<8> tag;
}
struct headers_t { h_t h; }
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        if (hdr.h.op == Op_t.ADD) {
            hdr.h.r = hdr.h.a + hdr.h.b;
        } else if (hdr.h.op == Op_t.SUB) {
            hdr.h.r = hdr.h.a - hdr.h.b;
        } else if (hdr.h.op == Op_t.XOR) {
            hdr.h.r = hdr.h.a ^ hdr.h.b;
        } else {
            hdr.h.r = 0xEE;
        }
        Op_t from_bits = (Op_t)(bit<8>)2;
        hdr.h.tag = (bit<8>)Op_t.XOR + (hdr.h.op == from_bits ? 8w2 : 8w0);
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
