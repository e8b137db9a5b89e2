// header_union: isValid of the union and of members, setValid on one member invalidates the
// other, emit(union) emits the valid member only.
#include <core.p4>
#include <v1model.p4>

header base_t {
    bit<8> kind;
    bit<8> flags;
}
header v4_t {
    bit<8> a;
    bit<8> b;
}
header v6_t {
    bit<16> w;
    bit<8>  c;
}
header_union ip_u {
    v4_t v4;
    v6_t v6;
}
struct headers_t {
    base_t base;
    ip_u   u;
}
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.base);
        transition select(hdr.base.kind) {
            4: parse_v4;
            6: parse_v6;
            default: accept;
        }
    }
    state parse_v4 {
        pkt.extract(hdr.u.v4);
        transition accept;
    }
    state parse_v6 {
        pkt.extract(hdr.u.v6);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        bit<8> f = 0;
        if (hdr.u.isValid()) { f = f | 1; }
        if (hdr.u.v4.isValid()) { f = f | 2; }
        if (hdr.u.v6.isValid()) { f = f | 4; }
        if (hdr.u.v4.isValid()) {
            bit<16> w = hdr.u.v4.a ++ hdr.u.v4.b;
            hdr.u.v6.setValid();
            hdr.u.v6.w = w;
            hdr.u.v6.c = 0x66;
        }
        if (!hdr.u.v4.isValid()) { f = f | 8; }
        hdr.base.flags = f;
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
        pkt.emit(hdr.base);
        pkt.emit(hdr.u);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
