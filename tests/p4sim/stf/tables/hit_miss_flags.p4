// apply().hit and apply().miss: an entry whose action is NoAction is still a
// hit; the hit and miss branches write different markers.

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
    table t {
        key = { hdr.h.k : exact; }
        actions = { NoAction; }
        default_action = NoAction();
    }
    table t2 {
        key = { hdr.h.k : exact; }
        actions = { NoAction; }
        default_action = NoAction();
    }
    apply {
        if (t.apply().hit) {
            hdr.h.r1 = 0x11;
        } else {
            hdr.h.r1 = 0x22;
        }
        if (t2.apply().miss) {
            hdr.h.r2 = 0x3333;
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
