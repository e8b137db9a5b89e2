// The deprecated data forms resubmit(data) and clone3(type, session, data): the user
// metadata fields named in data survive the resubmit; others are reset.
#include <core.p4>
#include <v1model.p4>

header tag_t {
    bit<8> kept;
    bit<8> lost;
    bit<8> passes;
}
struct hdrs_t { tag_t t; }
struct meta_t {
    bit<8> keep_me;
    bit<8> drop_me;
}

parser Prs(packet_in pkt, out hdrs_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.t); transition accept; }
}
control Vrf(inout hdrs_t h, inout meta_t m) { apply {} }
control Ing(inout hdrs_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (sm.instance_type == 0) {
            m.keep_me = 0x11;
            m.drop_me = 0x22;
            resubmit({ m.keep_me });
        } else {
            h.t.kept = m.keep_me;
            h.t.lost = m.drop_me;
            h.t.passes = (bit<8>)sm.instance_type;
            clone3(CloneType.I2E, 32w7, {});
        }
    }
}
control Egr(inout hdrs_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (sm.instance_type == 1) { h.t.passes = 0xC1; }
    }
}
control Upd(inout hdrs_t h, inout meta_t m) { apply {} }
control Dep(packet_out pkt, in hdrs_t h) { apply { pkt.emit(h.t); } }
V1Switch(Prs(), Vrf(), Ing(), Egr(), Upd(), Dep()) main;
