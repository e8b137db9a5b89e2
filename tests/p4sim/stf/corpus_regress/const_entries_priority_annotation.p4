// Legacy @priority(N) annotations on const entries follow BMv2: the smallest value
// wins, and an entry without the annotation takes its 1-based position.
#include <core.p4>
#include <v1model.p4>

header k_t { bit<8> k; bit<8> port; }
struct hdrs_t { k_t x; }
struct meta_t {}

parser Prs(packet_in pkt, out hdrs_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.x); transition accept; }
}
control Vrf(inout hdrs_t h, inout meta_t m) { apply {} }
control Ing(inout hdrs_t h, inout meta_t m, inout standard_metadata_t sm) {
    action send(bit<9> p) { sm.egress_spec = p; h.x.port = (bit<8>)p; }
    table pick {
        key = { h.x.k : ternary; }
        actions = { send; }
        default_action = send(9);
        const entries = {
            0x0F &&& 0x0F : send(1) @priority(5);
            0x0F          : send(2);
            0x00 &&& 0x00 : send(3) @priority(1);
            0xF0 &&& 0xF0 : send(4) @priority(0);
        }
    }
    apply { pick.apply(); }
}
control Egr(inout hdrs_t h, inout meta_t m, inout standard_metadata_t sm) { apply {} }
control Upd(inout hdrs_t h, inout meta_t m) { apply {} }
control Dep(packet_out pkt, in hdrs_t h) { apply { pkt.emit(h.x); } }
V1Switch(Prs(), Vrf(), Ing(), Egr(), Upd(), Dep()) main;
