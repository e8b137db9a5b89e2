// Generic structs and headers (struct S<T>, header H<T>; P4_16 7.2.9): each list of type
// arguments is a type of its own, as p4c's SpecializeGenericTypes makes it.
#include <core.p4>
#include <v1model.p4>

struct pair_t<T> {
    T first;
    T second;
}
header tagged_t<T> {
    bit<8> tag;
    T      value;
}
struct headers_t {
    tagged_t<bit<8>>  small;
    tagged_t<bit<16>> wide;
}
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.small);
        pkt.extract(hdr.wide);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        standard_metadata.egress_spec = 1;
        pair_t<bit<8>> p8 = { hdr.small.value, hdr.small.tag };
        pair_t<bit<16>> p16 = { hdr.wide.value, (bit<16>)p8.first };
        hdr.small.tag = p8.first;
        hdr.small.value = p8.second;
        hdr.wide.value = p16.first + p16.second;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t standard_metadata) { apply { } }
control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.small);
        pkt.emit(hdr.wide);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
