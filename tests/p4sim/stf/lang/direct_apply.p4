// Direct application of a control or parser type without an instance (P4_16 15.1):
// p4c's InstantiateDirectCalls declares one instance per call, named after the type, so
// the table inside Lookup is MyIngress.Lookup.t for the control plane.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> k;
    bit<8> v;
}
header t_t {
    bit<8> tag;
}
struct headers_t {
    h_t h;
    t_t t;
}
struct meta_t { }

parser Tag(packet_in pkt, out t_t t) {
    state start {
        pkt.extract(t);
        transition accept;
    }
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.k) {
            1: tag;
            default: accept;
        }
    }
    state tag {
        Tag.apply(pkt, hdr.t);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control Lookup(in bit<8> k, inout bit<8> v) {
    action set(bit<8> x) { v = x; }
    table t {
        key = { k: exact; }
        actions = { set; NoAction; }
        default_action = NoAction();
    }
    apply { t.apply(); }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        standard_metadata.egress_spec = 1;
        Lookup.apply(hdr.h.k, hdr.h.v);
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t standard_metadata) { apply { } }
control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
        pkt.emit(hdr.t);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
