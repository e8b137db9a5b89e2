// What the native path's PHV pool must reproduce (tests/p4sim/native/test_native_phv_pool.py):
// every pass reads fields of headers it may not have extracted (a plain header, a stack,
// a union member), so a packet's output depends on whose headers it got from the pool,
// and the high nibble of h.k picks a path that takes or gives back headers: multicast
// copies, an I2E clone (its own parse), resubmit, a drop at the end of ingress, a
// priority out of range, setValid/setInvalid, an E2E clone, recirculation, a drop at the
// end of egress.

#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  k;
    bit<8>  passes;
    bit<16> seen_ing;
    bit<16> seen_eg;
    bit<8>  itype;
    bit<8>  kept;
}
header opt_t { bit<16> v; }
header w_t { bit<16> w; }
header_union u_t { opt_t a; w_t b; }

struct headers_t {
    h_t    h;
    opt_t  opt;
    w_t[2] s;
    u_t    u;
}

struct meta_t {
    @field_list(1)
    bit<8> kept;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.k[3:0]) {
            1: parse_opt;
            2: parse_s;
            3: parse_ua;
            4: parse_ub;
            5: parse_all;
            default: accept;
        }
    }
    state parse_opt { pkt.extract(hdr.opt); transition accept; }
    state parse_s { pkt.extract(hdr.s.next); transition select(hdr.s.last.w[0:0]) { 1: parse_s2; default: accept; } }
    state parse_s2 { pkt.extract(hdr.s.next); transition accept; }
    state parse_ua { pkt.extract(hdr.u.a); transition accept; }
    state parse_ub { pkt.extract(hdr.u.b); transition accept; }
    state parse_all { pkt.extract(hdr.opt); pkt.extract(hdr.s.next); pkt.extract(hdr.s.next); pkt.extract(hdr.u.b); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.seen_ing = hdr.opt.v ^ (hdr.s[0].w << 1) ^ (hdr.s[1].w << 2) ^ (hdr.u.a.v << 3) ^ (hdr.u.b.w << 4);
        hdr.h.itype = (bit<8>) sm.instance_type;
        hdr.h.kept = meta.kept;
        meta.kept = hdr.h.k;
        if (sm.instance_type == 0) { hdr.h.passes = 0; }
        sm.egress_spec = 1;
        bit<4> op = hdr.h.k[7:4];
        if (op == 1) {
            sm.mcast_grp = 1;
        } else if (op == 2) {
            clone_preserving_field_list(CloneType.I2E, 5, 1);
        } else if (op == 3) {
            if (sm.instance_type == 0) { resubmit_preserving_field_list(1); }
        } else if (op == 4) {
            mark_to_drop(sm);
        } else if (op == 5) {
            sm.priority = 3;
        } else if (op == 6) {
            hdr.opt.setValid();
            hdr.opt.v = hdr.opt.v + 16w1;
            hdr.s.push_front(1);
        } else if (op == 7) {
            hdr.opt.setInvalid();
            hdr.s.pop_front(1);
            hdr.u.a.setInvalid();
        } else if (op == 12) {
            sm.mcast_grp = 2;
            clone_preserving_field_list(CloneType.I2E, 5, 1);
        }
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.seen_eg = hdr.opt.v + hdr.s[1].w + hdr.u.b.w;
        bit<4> op = hdr.h.k[7:4];
        if (op == 8 || op == 12) {
            if (sm.instance_type != 2) { clone_preserving_field_list(CloneType.E2E, 6, 1); }
        } else if (op == 9) {
            if (hdr.h.passes == 0) {
                hdr.h.passes = 1;
                recirculate_preserving_field_list(1);
            }
        } else if (op == 10) {
            mark_to_drop(sm);
        } else if (op == 11) {
            hdr.s[1].setValid();
            hdr.s[1].w = hdr.s[1].w ^ 16w0x5A5A;
        }
    }
}

control CC(inout headers_t hdr, inout meta_t meta) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); pkt.emit(hdr.opt); pkt.emit(hdr.s); pkt.emit(hdr.u); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
