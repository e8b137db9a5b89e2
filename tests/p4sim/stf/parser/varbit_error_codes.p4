// Errors from a two-argument extract into varbit<32>: PacketTooShort when the packet is shorter
// than the requested length (checked first), HeaderTooShort when the length exceeds the maximum.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> len;
    bit<8> status;
}
header opt_t {
    varbit<32> data;
}
header t_t {
    bit<8> v;
}
struct headers_t {
    h_t   h;
    opt_t opt;
    t_t   t;
}
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.h);
        pkt.extract(hdr.opt, (bit<32>)hdr.h.len * 8);
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
        bit<8> s = 0;
        if (hdr.opt.isValid()) { s = s | 0x01; }
        if (standard_metadata.parser_error == error.PacketTooShort) { s = s | 0x10; }
        if (standard_metadata.parser_error == error.HeaderTooShort) { s = s | 0x20; }
        hdr.h.status = s;
        if (hdr.t.isValid()) {
            hdr.t.v = hdr.t.v + 1;
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
        pkt.emit(hdr.opt);
        pkt.emit(hdr.t);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
