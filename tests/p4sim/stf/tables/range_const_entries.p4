// Range match kind (v1model) with const entries: inclusive bounds at both
// ends; the first listed entry wins where ranges overlap; outside every
// range the default action runs.

#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<16> k;
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
    action set_out(bit<9> port, bit<8> val) {
        standard_metadata.egress_spec = port;
        hdr.h.r1 = val;
    }
    action miss() {
        standard_metadata.egress_spec = 9;
        hdr.h.r1 = 0xEE;
    }
    table t {
        key = { hdr.h.k : range; }
        actions = { set_out; miss; }
        const entries = {
            16w100 .. 16w199 : set_out(1, 0x01);
            16w150 .. 16w300 : set_out(2, 0x02);
            16w1000 .. 16w1000 : set_out(3, 0x03);
        }
        default_action = miss();
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
