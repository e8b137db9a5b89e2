// A stack of header unions: extract into hs.next.a / hs.next.b (each moves nextIndex on
// and leaves the element's other member invalid), push_front, and emit of the whole stack
// (the valid member of each element).
#include <core.p4>
#include <v1model.p4>
header a_t { bit<8> kind; bit<8> x; }
header b_t { bit<8> kind; bit<16> y; }
header_union u_t { a_t a; b_t b; }
header cnt_t { bit<8> n; }
struct headers_t { cnt_t c; u_t[3] us; }
struct meta_t { }
parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.c);
        transition select(hdr.c.n) { 0: accept; 0x7F: two; default: one; }
    }
    state two {
        hdr.c.n = 1;
        transition one;
    }
    state one {
        hdr.c.n = hdr.c.n - 1;
        transition select(pkt.lookahead<bit<8>>()) { 0xA: pa; default: pb; }
    }
    state pa { pkt.extract(hdr.us.next.a); transition select(hdr.c.n) { 0: accept; default: one; } }
    state pb { pkt.extract(hdr.us.next.b); transition select(hdr.c.n) { 0: accept; default: one; } }
}
control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        standard_metadata.egress_spec = 1;
        if (hdr.us[1].a.isValid()) { hdr.us[1].a.x = 0xEE; }
        if (hdr.us[0].b.isValid()) { hdr.us[0].b.y = 0xBEEF; }
        if (hdr.c.n == 0x7F) { hdr.us.push_front(1); }
    }
}
control MyEgress(inout headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t standard_metadata) { apply { } }
control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.c); pkt.emit(hdr.us); } }
V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
