// Hash input packing: fields of 6, 8, 9 and 9 bits are packed MSB-first into
// one contiguous 32-bit word (no per-field byte padding); a constant counts
// at its declared width; only the end of the whole list is zero-padded to a
// byte. The third hash writes into an 8-bit field (result truncated).

#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<6>  f6;
    bit<8>  f8;
    bit<9>  f9a;
    bit<9>  f9b;
    bit<16> res16;
    bit<32> res32;
    bit<8>  res8;
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
        hash(hdr.h.res16, HashAlgorithm.crc16, 16w0,
             { hdr.h.f6, hdr.h.f8, hdr.h.f9a, hdr.h.f9b }, 32w65536);
        hash(hdr.h.res32, HashAlgorithm.crc32, 32w0,
             { hdr.h.f6, hdr.h.f8, hdr.h.f9a, hdr.h.f9b, 8w0xAB, hdr.h.f6 },
             32w0xFFFFFFFF);
        hash(hdr.h.res8, HashAlgorithm.crc16, 8w0,
             { hdr.h.f9a, hdr.h.f9b }, 32w65536);
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
        pkt.emit(hdr.h);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
