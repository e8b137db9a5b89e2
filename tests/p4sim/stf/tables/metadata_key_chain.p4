// Two tables in sequence: the first writes a class id into user metadata,
// the second matches on that metadata field (key name meta.cls).

#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  k;
    bit<8>  r1;
    bit<16> r2;
}

struct headers_t {
    h_t h;
}

struct meta_t {
    bit<8> cls;
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
    action set_cls(bit<8> c) {
        meta.cls = c;
    }
    action set_out(bit<9> port, bit<16> v) {
        standard_metadata.egress_spec = port;
        hdr.h.r2 = v;
    }
    table classify {
        key = { hdr.h.k : exact; }
        actions = { set_cls; NoAction; }
        default_action = NoAction();
    }
    table forward {
        key = { meta.cls : exact; }
        actions = { set_out; NoAction; }
        default_action = NoAction();
    }
    apply {
        classify.apply();
        hdr.h.r1 = meta.cls;
        forward.apply();
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
