// Const entries whose actions take several arguments of different widths,
// an entry bound to NoAction (a hit that does nothing) and a default action
// with arguments for misses.

#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  k;
    bit<8>  r1;
    bit<16> r2;
}

struct headers_t {
    h_t h;
}

struct meta_t {
}

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
    action put(bit<8> a, bit<16> b, bit<9> port) {
        hdr.h.r1 = a;
        hdr.h.r2 = b;
        standard_metadata.egress_spec = port;
    }
    table t {
        key = { hdr.h.k : exact; }
        actions = { put; NoAction; }
        const entries = {
            8w1 : put(0x01, 0x1111, 1);
            8w2 : put(0x02, 0x2222, 2);
            8w3 : NoAction();
        }
        default_action = put(0xDD, 0xDDDD, 13);
    }
    apply {
        t.apply();
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
