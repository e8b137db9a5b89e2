// The STF 'setdefault' command replaces a table's (non-const) default action
// with another action and arguments; packets before it use the declared
// default, packets after it the new one.

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
    action set_out(bit<9> port, bit<8> val) {
        standard_metadata.egress_spec = port;
        hdr.h.r1 = val;
    }
    action drop() {
        mark_to_drop(standard_metadata);
    }
    table t {
        key = { hdr.h.k : exact; }
        actions = { set_out; drop; }
        default_action = drop();
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
