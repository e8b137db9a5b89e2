// C-style for loops with break/continue and several updates, in actions. (p4c-bm2-ss
// refuses for-in loops: see tests/p4sim/test_check_errors.py. It accepts a loop in an
// apply block but BMv2 does not run it as written: with these loops there, a 4-iteration
// sum added nothing and a 5-iteration count ran once; p4sim warns, --Wwarn=bmv2-loop.)
#include <core.p4>
#include <v1model.p4>

header cnt_t {
    bit<8>  n;
    bit<16> total;
    bit<8>  odd;
    bit<8>  pairs;
}
header item_t { bit<8> x; }
struct hdrs_t { cnt_t c; item_t[3] items; }
struct meta_t {}

parser Prs(packet_in pkt, out hdrs_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.c);
        pkt.extract(h.items.next);
        pkt.extract(h.items.next);
        pkt.extract(h.items.next);
        transition accept;
    }
}
control Vrf(inout hdrs_t h, inout meta_t m) { apply {} }
control Ing(inout hdrs_t h, inout meta_t m, inout standard_metadata_t sm) {
    action count_odd() {
        h.c.odd = 0;
        for (bit<8> i = 0; i < h.c.n; i = i + 1) {
            if (i[0:0] == 0) { continue; }
            if (i > 9) { break; }
            h.c.odd = h.c.odd + 1;
        }
    }
    action sum_k() {
        h.c.total = 0;
        for (bit<8> k = 1; k <= 4; k = k + 1) {
            h.c.total = h.c.total + (bit<16>)k;
        }
    }
    action count_pairs() {
        h.c.pairs = 0;
        bit<8> j;
        for (bit<8> i = 0, j = 10; i < j; i = i + 1, j = j - 1) {
            h.c.pairs = h.c.pairs + 1;
        }
    }
    apply {
        sm.egress_spec = 1;
        sum_k();
        h.c.total = h.c.total + (bit<16>)h.items[0].x + (bit<16>)h.items[1].x + (bit<16>)h.items[2].x;
        count_pairs();
        count_odd();
    }
}
control Egr(inout hdrs_t h, inout meta_t m, inout standard_metadata_t sm) { apply {} }
control Upd(inout hdrs_t h, inout meta_t m) { apply {} }
control Dep(packet_out pkt, in hdrs_t h) { apply { pkt.emit(h); } }
V1Switch(Prs(), Vrf(), Ing(), Egr(), Upd(), Dep()) main;
