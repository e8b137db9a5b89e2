// Two instances of the same header type (outer/inner VLAN) parsed by chained selects; ingress
// removes the outer tag with setInvalid and fixes the ethertype.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}
header vlan_t {
    bit<16> tci;
    bit<16> etherType;
}
struct headers_t {
    ethernet_t ethernet;
    vlan_t     outer;
    vlan_t     inner;
}
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x8100: parse_outer;
            default: accept;
        }
    }
    state parse_outer {
        pkt.extract(hdr.outer);
        transition select(hdr.outer.etherType) {
            0x8100: parse_inner;
            default: accept;
        }
    }
    state parse_inner {
        pkt.extract(hdr.inner);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        if (hdr.outer.isValid()) {
            if (!hdr.inner.isValid()) {
                hdr.ethernet.etherType = hdr.outer.etherType;
            }
            hdr.outer.setInvalid();
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
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.outer);
        pkt.emit(hdr.inner);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
