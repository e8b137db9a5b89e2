// Header stack elements by constant index: read/write fields, setValid/setInvalid on elements,
// .size; emit(stack) emits the valid elements in index order.
#include <core.p4>
#include <v1model.p4>

header ctl_t {
    bit<8> n;
    bit<8> size;
}
header e_t {
    bit<8> v;
}
struct headers_t {
    ctl_t  ctl;
    e_t[4] hs;
}
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ctl);
        pkt.extract(hdr.hs[0]);
        pkt.extract(hdr.hs[1]);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        hdr.hs[1].v = hdr.hs[0].v + hdr.hs[1].v;
        hdr.hs[3].setValid();
        hdr.hs[3].v = 0x33;
        hdr.hs[0].setInvalid();
        hdr.ctl.size = (bit<8>)hdr.hs.size;
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
