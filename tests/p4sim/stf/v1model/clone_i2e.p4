// clone(CloneType.I2E, 5) with mirroring session 5 -> port 4: the clone is
// the packet as it entered ingress (ingress header changes are not seen),
// runs egress with instance_type 1 and egress_port 4; the original goes to
// port 1 with the ingress changes and instance_type 0.

#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  k;
    bit<8>  itype;
    bit<16> rid;
    bit<16> eport;
    bit<8>  tag;
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
    apply {
        hdr.h.tag = 0x77;
        clone(CloneType.I2E, 32w5);
        standard_metadata.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply {
        hdr.h.itype = (bit<8>) standard_metadata.instance_type;
        hdr.h.rid = standard_metadata.egress_rid;
        hdr.h.eport = (bit<16>) standard_metadata.egress_port;
    }
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
