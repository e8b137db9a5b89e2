// Functions: early return from an if, nested calls, a void function with out parameters.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> max_ab;
    bit<8> clamped;
    bit<4> hi;
    bit<4> lo;
}
struct headers_t { h_t h; }
struct meta_t { }

bit<8> max8(in bit<8> x, in bit<8> y) {
    if (x > y) {
        return x;
    }
    return y;
}

bit<8> clamp(in bit<8> v, in bit<8> lo, in bit<8> hi) {
    if (v < lo) {
        return lo;
    }
    return max8(lo, v) > hi ? hi : v;
}

void split(in bit<8> v, out bit<4> hi, out bit<4> lo) {
    hi = v[7:4];
    lo = v[3:0];
}

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
        hdr.h.max_ab = max8(hdr.h.a, hdr.h.b);
        hdr.h.clamped = clamp(hdr.h.a, 10, 100);
        split(hdr.h.b, hdr.h.hi, hdr.h.lo);
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
