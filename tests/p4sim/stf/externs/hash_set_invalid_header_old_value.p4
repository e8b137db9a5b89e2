// A header made invalid by setInvalid() after it was extracted keeps its field
// values (BMv2's mark_invalid only clears the valid bit). A hash() over one of
// its fields hashes that old value: p4c-bm2-ss copies the list into temporaries
// before the call, and a copy reads the field whether the header is valid or not.
// k == 1: opt valid; k == 3: opt extracted, then invalidated before the hash.

#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  k;
    bit<16> a;
    bit<32> res;
}

header opt_t {
    bit<16> v;
}

struct headers_t {
    h_t   h;
    opt_t opt;
}

struct meta_t {
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.k) {
            8w1 : parse_opt;
            8w3 : parse_opt;
            default : accept;
        }
    }
    state parse_opt {
        pkt.extract(hdr.opt);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        if (hdr.h.k == 8w3) {
            hdr.opt.setInvalid();
        }
        hash(hdr.h.res, HashAlgorithm.crc32, 32w0,
             { hdr.h.a, hdr.opt.v, hdr.h.a }, 32w0xFFFFFFFF);
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
        pkt.emit(hdr.opt);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
