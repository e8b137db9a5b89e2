// Header stack push_front/pop_front in a control (P4_16 semantics: the whole stack shifts,
// pushed elements are invalid, elements shifted past the end are lost); emit skips invalid ones.
#include <core.p4>
#include <v1model.p4>

header ctl_t {
    bit<8> op;
    bit<8> valid_bits;
}
header e_t {
    bit<8> tag;
    bit<8> v;
}
struct headers_t {
    ctl_t  ctl;
    e_t[3] hs;
}
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ctl);
        pkt.extract(hdr.hs.next);
        pkt.extract(hdr.hs.next);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        if (hdr.ctl.op == 1) {
            hdr.hs.push_front(1);
            hdr.hs[0].setValid();
            hdr.hs[0].tag = 0xAA;
            hdr.hs[0].v = 0xBB;
        } else if (hdr.ctl.op == 2) {
            hdr.hs.pop_front(1);
        } else if (hdr.ctl.op == 3) {
            hdr.hs.push_front(2);
        }
        bit<8> f = 0;
        if (hdr.hs[0].isValid()) { f = f | 1; }
        if (hdr.hs[1].isValid()) { f = f | 2; }
        if (hdr.hs[2].isValid()) { f = f | 4; }
        hdr.ctl.valid_bits = f;
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
        pkt.emit(hdr.ctl);
        pkt.emit(hdr.hs);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
