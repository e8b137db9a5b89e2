// Action parameters of non-byte widths (bit<4>, bit<12>, bit<1>) and a 48-bit
// parameter are passed from STF and written into header fields.

#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  k;
    bit<4>  a;
    bit<12> b;
    bit<48> mac;
    bit<1>  flag;
    bit<7>  pad;
}

struct headers_t {
    h_t h;
}

struct meta_t {
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
    action setall(bit<4> a, bit<12> b, bit<48> mac, bit<1> flag, bit<9> port) {
        hdr.h.a = a;
        hdr.h.b = b;
        hdr.h.mac = mac;
        hdr.h.flag = flag;
        standard_metadata.egress_spec = port;
    }
    table t {
        key = { hdr.h.k : exact; }
        actions = { setall; NoAction; }
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
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
