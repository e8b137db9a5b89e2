// Optional match kind with const entries: an optional key is either an
// exact value or '_' (don't care). The first listed matching entry wins.

#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> r1;
    bit<8> r2;
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
    action set_out(bit<9> port, bit<8> val) {
        standard_metadata.egress_spec = port;
        hdr.h.r1 = val;
    }
    table t {
        key = {
            hdr.h.a : optional;
            hdr.h.b : optional;
        }
        actions = { set_out; NoAction; }
        const entries = {
            (8w1, 8w2) : set_out(1, 0x12);
            (8w1, _) : set_out(2, 0x10);
            (_, 8w2) : set_out(3, 0x02);
        }
        default_action = NoAction();
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
