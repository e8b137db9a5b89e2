// Generic parser and control declarations instantiated with concrete types: one generic
// sub-parser extracts two header types; a generic control with a constructor parameter of
// its type parameter adds a different step per instance; a generic control with a local
// of type T, an action and a table keyed on a T-typed parameter gets one table per
// instance (MyIngress.look8.t with an 8-bit key, MyIngress.look16.t with a 16-bit key).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  a;
    bit<16> w;
    bit<8>  old_a;
    bit<8>  hit8;
    bit<8>  hit16;
}
header t_t {
    bit<8> tag;
}
struct headers_t {
    h_t h;
    t_t t;
}
struct meta_t {
    bit<8> unused;
}

parser Sub<H>(packet_in pkt, out H x) {
    state start {
        pkt.extract(x);
        transition accept;
    }
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    Sub<h_t>() sub_h;
    Sub<t_t>() sub_t;
    state start {
        sub_h.apply(pkt, hdr.h);
        transition select(hdr.h.a) {
            1: tag;
            default: accept;
        }
    }
    state tag {
        sub_t.apply(pkt, hdr.t);
        transition accept;
    }
}

control Add<T>(inout T v)(T step) {
    apply {
        v = v + step;
    }
}

control Remember<T>(in T v, out T old) {
    T saved;
    action keep() {
        saved = v;
    }
    apply {
        keep();
        old = saved;
    }
}

control Lookup<K>(in K key, out bit<8> found) {
    action set(bit<8> x) {
        found = x;
    }
    table t {
        key = { key: exact; }
        actions = { set; NoAction; }
        default_action = set(0xEE);
    }
    apply {
        found = 0;
        t.apply();
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    Add<bit<8>>(3) add8;
    Add<bit<16>>(0x100) add16;
    Remember<bit<8>>() remember;
    Lookup<bit<8>>() look8;
    Lookup<bit<16>>() look16;
    apply {
        remember.apply(hdr.h.a, hdr.h.old_a);
        look8.apply(hdr.h.a, hdr.h.hit8);
        look16.apply(hdr.h.w, hdr.h.hit16);
        add8.apply(hdr.h.a);
        add16.apply(hdr.h.w);
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
        pkt.emit(hdr.t);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
