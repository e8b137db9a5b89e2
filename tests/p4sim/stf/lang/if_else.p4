// if / else if / else chains and nested ifs; a == 0 is dropped with mark_to_drop.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> range_class;
    bit<8> bits_class;
}
struct headers_t { h_t h; }
struct meta_t { }

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
        standard_metadata.egress_spec = 2;
        if (hdr.h.a == 0) {
            mark_to_drop(standard_metadata);
        } else if (hdr.h.a < 10) {
            hdr.h.range_class = 1;
        } else if (hdr.h.a < 100) {
            hdr.h.range_class = 2;
        } else if (hdr.h.a == 200) {
            hdr.h.range_class = 3;
        } else {
            hdr.h.range_class = 4;
        }
        if (hdr.h.b[0:0] == 1) {
            if (hdr.h.b[1:1] == 1) {
                hdr.h.bits_class = 3;
            } else {
                hdr.h.bits_class = 1;
            }
        } else {
            hdr.h.bits_class = 0;
        }
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
