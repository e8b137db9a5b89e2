// A table keyed on hdr.opt.isValid() with a control-plane name given by
// @name("opt_valid"); STF entries use that name with values 1 and 0.

#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  k;
    bit<8>  r1;
    bit<16> r2;
}

header opt_t {
    bit<8> v;
}

struct headers_t {
    h_t   h;
    opt_t opt;
}

struct meta_t {
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.k) {
            8w1 : parse_opt;
            default : accept;
        }
    }
    state parse_opt {
        pkt.extract(hdr.opt);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    action set_out(bit<9> port, bit<8> val) {
        standard_metadata.egress_spec = port;
        hdr.h.r1 = val;
    }
    table t {
        key = {
            hdr.opt.isValid() : exact @name("opt_valid");
        }
        actions = { set_out; NoAction; }
        default_action = NoAction();
    }
    apply {
        t.apply();
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
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
