// A verify that fails after an extract in the same state: the extracted header stays valid
// (ingress clamps it) and parsing stops before the trailer.
#include <core.p4>
#include <v1model.p4>

error { TooLong }

header h_t {
    bit<8> code;
}
header t_t {
    bit<8> len;
    bit<8> v;
}
header tr_t {
    bit<8> v;
}
struct headers_t {
    h_t  h;
    t_t  t;
    tr_t tr;
}
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.h);
        transition parse_t;
    }
    state parse_t {
        pkt.extract(hdr.t);
        verify(hdr.t.len <= 10, error.TooLong);
        pkt.extract(hdr.tr);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.parser_error == error.TooLong) {
            hdr.h.code = 0xE1;
            if (hdr.t.isValid()) {
                hdr.t.len = 10;
            }
        }
        if (hdr.tr.isValid()) {
            hdr.tr.v = hdr.tr.v + 1;
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
        pkt.emit(hdr.h);
        pkt.emit(hdr.t);
        pkt.emit(hdr.tr);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
