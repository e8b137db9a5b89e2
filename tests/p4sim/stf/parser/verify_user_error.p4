// verify(cond, error.BadVersion) stops parsing with a user error; the packet still reaches ingress
// with standard_metadata.parser_error set, and the unparsed bytes follow the emitted headers.
#include <core.p4>
#include <v1model.p4>

error { BadVersion }

header h_t {
    bit<8> version;
    bit<8> result;
}
header t_t {
    bit<16> v;
}
struct headers_t {
    h_t h;
    t_t t;
}
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.h);
        verify(hdr.h.version == 4, error.BadVersion);
        pkt.extract(hdr.t);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.parser_error == error.NoError) {
            hdr.h.result = 0x00;
            standard_metadata.egress_spec = 1;
        } else if (standard_metadata.parser_error == error.BadVersion) {
            hdr.h.result = 0xB1;
            standard_metadata.egress_spec = 2;
        } else {
            hdr.h.result = 0xFF;
            standard_metadata.egress_spec = 3;
        }
        if (hdr.t.isValid()) {
            hdr.t.v = hdr.t.v + 1;
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
        pkt.emit(hdr.t);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
