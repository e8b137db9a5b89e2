// A table with a key, no default_action and an action list without NoAction:
// a miss runs the implicit NoAction default.
#include <core.p4>
#include <v1model.p4>

header pair_t {
    bit<8> k;
    bit<8> v;
}
struct hdrs_t { pair_t p; }
struct meta_t {}

parser Prs(packet_in pkt, out hdrs_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.p); transition accept; }
}
control Vrf(inout hdrs_t h, inout meta_t m) { apply {} }
control Ing(inout hdrs_t h, inout meta_t m, inout standard_metadata_t sm) {
    action mark(bit<8> x) { h.p.v = x; }
    table lookup {
        key = { h.p.k : exact; }
        actions = { mark; }
    }
    apply {
        sm.egress_spec = 1;
        if (!lookup.apply().hit) { h.p.v = h.p.v + 1; }
    }
}
control Egr(inout hdrs_t h, inout meta_t m, inout standard_metadata_t sm) { apply {} }
control Upd(inout hdrs_t h, inout meta_t m) { apply {} }
control Dep(packet_out pkt, in hdrs_t h) { apply { pkt.emit(h.p); } }
V1Switch(Prs(), Vrf(), Ing(), Egr(), Upd(), Dep()) main;
