// A register written in ingress is read back by the next packet: each packet
// reports the previous packet's r1 value (0 for the first one) and stores
// its own. A second register is written in ingress and read in egress of the
// same packet.

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
    register<bit<8>>(32w1) last;
    apply {
        bit<8> prev;
        last.read(prev, 32w0);
        last.write(32w0, hdr.h.r1);
        hdr.h.k = prev;
        standard_metadata.egress_spec = 2;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t standard_metadata) {
    register<bit<16>>(32w2) eg;
    apply {
        bit<16> x;
        eg.write(32w1, 16w0xBEEF);
        eg.read(x, 32w1);
        hdr.h.r2 = x;
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
