// clone(CloneType.E2E, 6) in egress, session 6 -> port 5: the clone carries
// the headers as modified by egress (tag incremented once), then runs
// egress again as instance_type 2 on port 5 (tag incremented a second time).
// The original leaves on port 2 with instance_type 0.

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
        standard_metadata.egress_spec = 2;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply {
        hdr.h.tag = hdr.h.tag + 1;
        hdr.h.itype = (bit<8>) standard_metadata.instance_type;
        hdr.h.eport = (bit<16>) standard_metadata.egress_port;
        if (standard_metadata.instance_type == 0) {
            clone(CloneType.E2E, 32w6);
        }
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
