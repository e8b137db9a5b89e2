// The deprecated mark_to_drop() without arguments (BMv2's drop primitive) marks the
// standard metadata of the packet being processed: egress_spec = 511 and mcast_grp = 0,
// even when called in a control that was given no standard metadata at all, and in an
// action whose own standard_metadata_t parameter is a local copy.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> k;
    bit<8> itype;
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

control Filter(in h_t h) {
    apply {
        if (h.k == 0) {
            mark_to_drop();
        }
    }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    Filter() filter;
    standard_metadata_t copy;
    action drop_via_copy(inout standard_metadata_t sm) {
        mark_to_drop();
    }
    apply {
        standard_metadata.mcast_grp = 1;      // multicast unless dropped
        filter.apply(hdr.h);
        if (hdr.h.k == 2) {
            copy = standard_metadata;
            drop_via_copy(copy);
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply {
        hdr.h.itype = (bit<8>)standard_metadata.instance_type;
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
