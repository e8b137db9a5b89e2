// Generic functions: type arguments inferred from the arguments (an untyped literal takes
// the type of the others), written explicitly, bound to headers, signed values and header
// stacks; out/inout parameters of a type parameter; a generic calling another generic.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  a;
    bit<8>  b;
    bit<16> w;
    bit<8>  picked8;
    bit<16> picked16;
    bit<8>  signed_pick;
    bit<8>  copy;
    bit<8>  twice;
}
header tag_t {
    bit<8> v;
}
struct headers_t {
    h_t      h;
    tag_t[2] tags;
    tag_t    out_tag;
}
struct meta_t {
    bool a_wins;
}

T pick<T>(in bool c, in T x, in T y) {
    return c ? x : y;
}

void swap<T>(inout T x, inout T y) {
    T t = x;
    x = y;
    y = t;
}

// returns x and copies it to `copy` through another generic function
T twice<T>(in T x, out T copy) {
    copy = pick(true, x, x);
    return pick(false, copy, copy);
}

// H is bound to a header: the result is a whole header (valid or not)
H second<H>(in H[2] stack) {
    return stack[1];
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.h);
        pkt.extract(hdr.tags.next);
        pkt.extract(hdr.tags.next);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        meta.a_wins = hdr.h.a > hdr.h.b;
        hdr.h.picked8 = pick(meta.a_wins, hdr.h.a, 0x7F);               // pick<bit<8>>
        hdr.h.picked16 = pick<bit<16>>(meta.a_wins, hdr.h.w, 16w0xBEEF);
        int<8> s = pick(meta.a_wins, (int<8>)hdr.h.a, -3);              // pick<int<8>>
        hdr.h.signed_pick = (bit<8>)(s >> 1);                           // arithmetic shift
        swap(hdr.h.a, hdr.h.b);
        hdr.h.twice = twice(hdr.h.b, hdr.h.copy);
        hdr.out_tag = second(hdr.tags);
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
        pkt.emit(hdr.out_tag);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
