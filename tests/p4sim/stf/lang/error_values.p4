// error values: user-declared errors, error variables and metadata fields, == / != comparisons;
// parser_error is error.NoError for a well-formed packet.
#include <core.p4>
#include <v1model.p4>

error { Oops, Bad }

header h_t {
    bit<8> a;
    bit<8> code;
    bit<8> no_parse_error;
}
struct headers_t { h_t h; }
struct meta_t {
    error e;
}

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
        error e = error.NoError;
        if (hdr.h.a == 1) {
            e = error.Oops;
        } else if (hdr.h.a == 2) {
            e = error.Bad;
        }
        meta.e = e;
        if (meta.e == error.Oops) {
            hdr.h.code = 1;
        } else if (meta.e == error.Bad) {
            hdr.h.code = 2;
        } else if (meta.e != error.Oops && meta.e == error.NoError) {
            hdr.h.code = 3;
        }
        hdr.h.no_parse_error = standard_metadata.parser_error == error.NoError ? 8w1 : 8w0;
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

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
