// Actions listed in a table with a bound out/inout argument: the table's action
// must copy the result back into the bound lvalue (one table per target field).
#include <core.p4>
#include <v1model.p4>

header rec_t {
    bit<8> sel;
    bit<8> a;
    bit<8> b;
}
struct hdrs_t { rec_t r; }
struct meta_t {}

parser Prs(packet_in pkt, out hdrs_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.r); transition accept; }
}
control Vrf(inout hdrs_t h, inout meta_t m) { apply {} }
control Ing(inout hdrs_t h, inout meta_t m, inout standard_metadata_t sm) {
    action put(out bit<8> dst, bit<8> val) { dst = val; }
    action bump(inout bit<8> dst) { dst = dst + 1; }
    table to_a {
        key = { h.r.sel : exact; }
        actions = { put(h.r.a); NoAction; }
        default_action = NoAction;
    }
    table to_b {
        key = { h.r.sel : exact; }
        actions = { bump(h.r.b); NoAction; }
        default_action = bump(h.r.b);
    }
    apply {
        sm.egress_spec = 3;
        to_a.apply();
        to_b.apply();
    }
}
control Egr(inout hdrs_t h, inout meta_t m, inout standard_metadata_t sm) { apply {} }
control Upd(inout hdrs_t h, inout meta_t m) { apply {} }
control Dep(packet_out pkt, in hdrs_t h) { apply { pkt.emit(h.r); } }
V1Switch(Prs(), Vrf(), Ing(), Egr(), Upd(), Dep()) main;
