// In "stack[i].f = f(inout i)" the stack index is evaluated after the right-hand side's
// call and its copy-out (p4c: SideEffectOrdering keeps the assignment whole and
// InlineFunctions puts the body of f before it), so the call changing i moves the target.
#include <core.p4>
#include <v1model.p4>

header sel_t { bit<8> i; }
header slot_t { bit<8> v; }
struct hdrs_t { sel_t s; slot_t[3] slots; }
struct meta_t {}

bit<8> take(inout bit<8> i) {
    i = i + 1;
    return 8w0xEE;
}

parser Prs(packet_in pkt, out hdrs_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.s);
        pkt.extract(h.slots.next);
        pkt.extract(h.slots.next);
        pkt.extract(h.slots.next);
        transition accept;
    }
}
control Vrf(inout hdrs_t h, inout meta_t m) { apply {} }
control Ing(inout hdrs_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        h.slots[h.s.i].v = take(h.s.i);
    }
}
control Egr(inout hdrs_t h, inout meta_t m, inout standard_metadata_t sm) { apply {} }
control Upd(inout hdrs_t h, inout meta_t m) { apply {} }
control Dep(packet_out pkt, in hdrs_t h) { apply { pkt.emit(h); } }
V1Switch(Prs(), Vrf(), Ing(), Egr(), Upd(), Dep()) main;
