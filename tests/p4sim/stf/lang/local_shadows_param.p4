// A control's own local named like one of its parameters: p4c-bm2-ss 1.2.5.16 accepts it
// with the warning "'meta' shadows 'meta'"; uses written before the local still denote the
// parameter, later ones (the action's body and the apply block included) the local.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> c;
}
struct headers_t { h_t h; }
struct meta_t { bit<8> m; }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.h);
        meta.m = hdr.h.c;
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    bit<8> before = meta.m + 1;   // the parameter
    bit<8> meta = 0x40;            // from here on, `meta` is this local
    action copy_local() {
        hdr.h.a = meta;
    }
    apply {
        meta = meta | hdr.h.a;
        copy_local();
        hdr.h.b = before;
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

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
