// Named arguments that name the same l-value: copy-out follows the order the arguments
// are written in the call, not the parameters' order (p4c-bm2-ss 1.2.5.16 + BMv2 1.15.5
// give 01 02 03 05 06 for the packet of the .stf). Functions, actions and a control's apply.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; bit<8> e; }
struct headers_t { h_t h; }
struct meta_t { }

void f(inout bit<8> x, inout bit<8> y) { x = 1; y = 2; }

control Sub(inout bit<8> x, inout bit<8> y) {
    apply { x = 5; y = 6; }
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t m) { apply { } }
control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    Sub() sub1;
    Sub() sub2;
    action g(inout bit<8> x, out bit<8> y) { x = 3; y = 4; }
    apply {
        sm.egress_spec = 0;
        f(y = hdr.h.a, x = hdr.h.a);    // y copied out first, then x: 1
        f(x = hdr.h.b, y = hdr.h.b);    // 2
        g(y = hdr.h.c, x = hdr.h.c);    // 3
        sub1.apply(y = hdr.h.d, x = hdr.h.d);  // 5
        sub2.apply(x = hdr.h.e, y = hdr.h.e);  // 6
    }
}
control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
