// Local variables inside an action, and an action calling another action (which sees the
// caller's earlier writes).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> c;
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
    action invert_b_into_c() {
        hdr.h.c = hdr.h.b ^ 0xFF;
    }
    action compute(bit<8> k) {
        bit<8> tmp = hdr.h.a + k;
        hdr.h.b = tmp << 1;
        invert_b_into_c();
    }
    apply {
        compute(3);
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
