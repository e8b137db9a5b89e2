// lookahead<bit<16>>() into a parser local, select on a slice of it; nothing is consumed.
#include <core.p4>
#include <v1model.p4>

header v_t {
    bit<4>  version;
    bit<4>  low;
    bit<8>  second;
}
header report_t {
    bit<8> kind;
    bit<8> low;
}
struct headers_t {
    report_t report;
    v_t   v;
}
struct meta_t {
    bit<8> kind;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        bit<16> peek = pkt.lookahead<bit<16>>();
        transition select(peek[15:12]) {
            4: parse_four;
            6: parse_six;
            default: accept;
        }
    }
    state parse_four {
        meta.kind = 1;
        pkt.extract(hdr.v);
        transition accept;
    }
    state parse_six {
        meta.kind = 2;
        pkt.extract(hdr.v);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        hdr.report.setValid();
        hdr.report.kind = meta.kind;
        hdr.report.low = hdr.v.isValid() ? (bit<8>)hdr.v.low : 8w0;
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
        pkt.emit(hdr.report);
        pkt.emit(hdr.v);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
