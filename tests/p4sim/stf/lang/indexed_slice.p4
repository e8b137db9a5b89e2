// Indexed slices (P4_16 1.2.4): e[lsb +: width] is e[lsb + width - 1 : lsb], read and written;
// a state without a transition statement goes to reject (p4c: implicit transition).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<16> w;
    bit<8>  high;
    bit<8>  low;
    bit<8>  nibbles;
}
header tail_t {
    bit<8> v;
}
struct headers_t { h_t h; tail_t t; }
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.w[15 +: 1]) {
            1: no_transition;
            default: accept;
        }
    }
    state no_transition {
        pkt.extract(hdr.t);
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        hdr.h.high = hdr.h.w[8 +: 8];
        hdr.h.low = hdr.h.w[0 +: 8];
        hdr.h.nibbles[4 +: 4] = hdr.h.w[12 +: 4];
        hdr.h.nibbles[0 +: 4] = hdr.h.w[0+:4];
        standard_metadata.egress_spec = 1;
        if (hdr.t.isValid()) {
            hdr.t.v = 0x55;
        }
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
