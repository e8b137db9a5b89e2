// Non-serializable enum: values assigned and compared in ingress, carried in metadata to egress.
#include <core.p4>
#include <v1model.p4>

enum Color_t { RED, GREEN, BLUE }

header h_t {
    bit<8> a;
    bit<8> in_ingress;
    bit<8> in_egress;
}
struct headers_t { h_t h; }
struct meta_t {
    Color_t color;
}

bit<8> color_code(in Color_t c) {
    if (c == Color_t.RED) {
        return 1;
    } else if (c == Color_t.GREEN) {
        return 2;
    }
    return 3;
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
        Color_t c;
        if (hdr.h.a < 10) {
            c = Color_t.RED;
        } else if (hdr.h.a < 20) {
            c = Color_t.GREEN;
        } else {
            c = Color_t.BLUE;
        }
        meta.color = c;
        hdr.h.in_ingress = color_code(c);
        standard_metadata.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply {
        hdr.h.in_egress = 0x80 | color_code(meta.color);
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
