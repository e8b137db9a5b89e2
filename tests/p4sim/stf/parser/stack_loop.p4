// Parser loop over a header stack with .next, selecting on .last.bos and recording .lastIndex;
// a fifth element overflows the 4-element stack (StackOutOfBounds) and parsing stops there.
#include <core.p4>
#include <v1model.p4>

header ctl_t {
    bit<8> count;
    bit<8> last_index;
    bit<8> overflow;
}
header e_t {
    bit<7> v;
    bit<1> bos;
}
struct headers_t {
    ctl_t  ctl;
    e_t[4] hs;
}
struct meta_t {
    bit<32> last_index;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ctl);
        transition parse_elem;
    }
    state parse_elem {
        pkt.extract(hdr.hs.next);
        meta.last_index = hdr.hs.lastIndex;
        transition select(hdr.hs.last.bos) {
            1: accept;
            default: parse_elem;
        }
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        bit<8> n = 0;
        if (hdr.hs[0].isValid()) { n = n + 1; }
        if (hdr.hs[1].isValid()) { n = n + 1; }
        if (hdr.hs[2].isValid()) { n = n + 1; }
        if (hdr.hs[3].isValid()) { n = n + 1; }
        hdr.ctl.count = n;
        hdr.ctl.last_index = (bit<8>)meta.last_index;
        if (standard_metadata.parser_error == error.StackOutOfBounds) {
            hdr.ctl.overflow = 1;
        }
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
