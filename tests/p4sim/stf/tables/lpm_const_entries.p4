// LPM const entries written as value &&& mask with a prefix mask (the P4_16
// way to write a prefix in entries); longest prefix wins regardless of the
// listing order.

#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<32> addr;
    bit<8>  r1;
    bit<8>  r2;
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
    action route(bit<9> port, bit<8> tag) {
        standard_metadata.egress_spec = port;
        hdr.h.r1 = tag;
    }
    table t {
        key = { hdr.h.addr : lpm; }
        actions = { route; NoAction; }
        const entries = {
            32w0x0A000000 &&& 32w0xFF000000 : route(1, 8);
            32w0x0A0A0000 &&& 32w0xFFFF0000 : route(2, 16);
            32w0x0A0A0A00 &&& 32w0xFFFFFF00 : route(3, 24);
        }
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
