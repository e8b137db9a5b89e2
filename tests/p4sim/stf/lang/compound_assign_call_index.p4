// Compound assignment whose left side has a call: the call runs once per statement
// (p4c's SideEffectOrdering puts it in a temporary, then RemoveOpAssign rewrites lhs op= rhs).
#include <core.p4>
#include <v1model.p4>

header count_t {
    bit<8> calls;
}
header slot_t {
    bit<8> v;
}
struct headers_t {
    count_t   c;
    slot_t[4] s;
}
struct meta_t {
    bit<8> cursor;
}

// The slot under the cursor; moves the cursor on (a side effect on an inout argument).
bit<8> take_slot(inout bit<8> cursor) {
    bit<8> slot = cursor;
    cursor = cursor + 1;
    return slot;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.c);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        meta.cursor = hdr.c.calls;
        hdr.s[take_slot(meta.cursor) & 3].v += 0x10;
        hdr.s[take_slot(meta.cursor) & 3].v ^= 0xFF;
        hdr.s[take_slot(meta.cursor) & 3].v >>= 3;
        hdr.c.calls = meta.cursor;
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
        pkt.emit(hdr.c);
        pkt.emit(hdr.s);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
