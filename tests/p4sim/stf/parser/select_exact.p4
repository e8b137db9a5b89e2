// select on a 16-bit field with exact values and default: accept; the unparsed rest is re-emitted.
#include <core.p4>
#include <v1model.p4>

header eth_t {
    bit<16> etype;
    bit<8>  flags;
}
header a_t {
    bit<8> a;
}
header b_t {
    bit<16> b;
}
struct headers_t {
    eth_t eth;
    a_t   a;
    b_t   b;
}
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.etype) {
            0x0800: parse_a;
            0x86DD: parse_b;
            default: accept;
        }
    }
    state parse_a {
        pkt.extract(hdr.a);
        transition accept;
    }
    state parse_b {
        pkt.extract(hdr.b);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        bit<8> f = 0;
        if (hdr.a.isValid()) { f = f | 1; }
        if (hdr.b.isValid()) { f = f | 2; }
        hdr.eth.flags = f;
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
        pkt.emit(hdr.eth);
        pkt.emit(hdr.a);
        pkt.emit(hdr.b);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
