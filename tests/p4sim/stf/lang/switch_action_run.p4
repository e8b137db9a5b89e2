// switch (t.apply().action_run): a label per action, two actions sharing a block by fall-through,
// default for the miss (NoAction default action).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> p;
    bit<8> r;
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
    action act_a(bit<8> v) { hdr.h.p = v; }
    action act_b(bit<8> v) { hdr.h.p = v; }
    action act_c(bit<8> v) { hdr.h.p = v; }
    table t {
        key = { hdr.h.a : exact; }
        actions = { act_a; act_b; act_c; NoAction; }
        default_action = NoAction();
    }
    apply {
        switch (t.apply().action_run) {
            act_a: { hdr.h.r = 0x0A; }
            act_b:
            act_c: { hdr.h.r = 0xBC; }
            default: { hdr.h.r = 0xDF; }
        }
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
