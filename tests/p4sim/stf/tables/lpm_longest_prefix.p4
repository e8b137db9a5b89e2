// LPM on a 32-bit address: /8, /16 and /24 prefixes overlap; the longest
// matching prefix must win regardless of the order the entries were added.
// An address outside all prefixes misses (NoAction, port 0).

#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<32> addr;
    bit<8>  r1;
    bit<8>  r2;
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
    action route(bit<9> port, bit<8> tag) {
        standard_metadata.egress_spec = port;
        hdr.h.r1 = tag;
    }
    table t {
        key = { hdr.h.addr : lpm; }
        actions = { route; NoAction; }
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
