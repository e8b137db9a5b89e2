// Nested structs in metadata: assignment of an inner struct from a list, copying the outer
// struct to a local (a deep copy: later changes do not alias).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> c;
    bit<8> d;
    bit<8> e;
}
struct headers_t { h_t h; }

struct inner_t {
    bit<8> p;
    bit<8> q;
}
struct outer_t {
    inner_t i;
    bit<8>  r;
}
struct meta_t {
    outer_t o;
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
        meta.o.i = { hdr.h.a, hdr.h.b };
        meta.o.r = meta.o.i.p + meta.o.i.q;
        outer_t l = meta.o;
        l.r = l.r ^ 0xFF;
        l.i.p = 0;
        hdr.h.c = l.r;
        hdr.h.d = meta.o.r;
        hdr.h.e = meta.o.i.p;
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
