// t.apply().miss in an if condition (tables may be applied once); a miss running a non-NoAction default is still a miss.
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
    action set_p(bit<8> v) { hdr.h.p = v; }
    table t {
        key = { hdr.h.a : exact; }
        actions = { set_p; NoAction; }
        default_action = NoAction();
    }
    apply {
        if (t.apply().miss) {
            hdr.h.r = 2;
        } else {
            hdr.h.r = 1;
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
