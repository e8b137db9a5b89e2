// Two-argument extract into a varbit<32> field with a run-time length (bytes * 8); the varbit
// header is re-emitted with its extracted length; a zero-length extract still makes it valid.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> len;
    bit<8> opt_valid;
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
        hdr.h.opt_valid = hdr.opt.isValid() ? 8w1 : 8w0;
        hdr.t.v = hdr.t.v + 1;
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
