// Constructor arguments of a control instance are read where the instance is declared: a
// control instance of the enclosing control (C2(c1) c2;, a parameter of a control type)
// and a constant local to it (Shift(K) s;).
#include <core.p4>
#include <v1model.p4>

header h_t { bit<16> x; }
struct headers_t { h_t h; }
struct meta_t { }

control Step_t(inout bit<16> x);

control Add1(inout bit<16> x) {
    apply { x = x + 1; }
}
control Twice(inout bit<16> x)(Step_t step) {
    apply {
        step.apply(x);
        step.apply(x);
    }
}
control Shift(inout bit<16> x)(bit<4> by) {
    apply { x = x << by; }
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    const bit<4> K = 4;
    Add1() add1;
    Twice(add1) twice;
    Shift(K) shift;
    apply {
        standard_metadata.egress_spec = 1;
        twice.apply(hdr.h.x);
        shift.apply(hdr.h.x);
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t standard_metadata) { apply { } }
control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
