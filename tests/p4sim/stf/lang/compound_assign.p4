// Compound assignment (P4_16 1.2.5): lhs op= rhs is lhs = lhs op (rhs), for every operator
// p4c's grammar has (+= -= *= /= %= &= |= ^= <<= >>= |+|= |-|=), on fields and a slice.
// /= and %= by powers of two: p4c-bm2-ss turns those into a shift and a mask and refuses
// any other division of a run-time value ("could not evaluate expression at compilation
// time"; BMv2 has no run-time / or %), and so does p4sim.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> add;
    bit<8> sub;
    bit<8> mul;
    bit<8> div;
    bit<8> mod;
    bit<8> band;
    bit<8> bor;
    bit<8> bxor;
    bit<8> shl;
    bit<8> shr;
    bit<8> sat_add;
    bit<8> sat_sub;
    bit<8> low_nibble;
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
    apply {
        hdr.h.add = hdr.h.a;   hdr.h.add += hdr.h.b;
        hdr.h.sub = hdr.h.a;   hdr.h.sub -= hdr.h.b;
        hdr.h.mul = hdr.h.a;   hdr.h.mul *= hdr.h.b;
        hdr.h.div = hdr.h.a;   hdr.h.div /= 8;
        hdr.h.mod = hdr.h.a;   hdr.h.mod %= 16;
        hdr.h.band = hdr.h.a;  hdr.h.band &= hdr.h.b;
        hdr.h.bor = hdr.h.a;   hdr.h.bor |= hdr.h.b;
        hdr.h.bxor = hdr.h.a;  hdr.h.bxor ^= hdr.h.b;
        hdr.h.shl = hdr.h.a;   hdr.h.shl <<= 1 + 1;  // the right side is one operand: << 2
        hdr.h.shr = hdr.h.a;   hdr.h.shr >>= 2;
        hdr.h.sat_add = hdr.h.a;  hdr.h.sat_add |+|= 100;
        hdr.h.sat_sub = hdr.h.b;  hdr.h.sat_sub |-|= 10;
        // a slice as the left side: only the low 4 bits change
        hdr.h.low_nibble = hdr.h.a;  hdr.h.low_nibble[3:0] += 4w4 + 4w5;
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
