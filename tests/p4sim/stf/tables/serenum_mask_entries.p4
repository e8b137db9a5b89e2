// Serializable-enum members in const entries with masks: for a bit<8> key (E.A &&& 0xF0,
// the member standing for its value as in p4c's typeSet) and for a key of the enum type
// itself (K.X &&& K.MASK, or an integer mask: K.Y &&& 0xF0).
#include <core.p4>
#include <v1model.p4>

enum bit<8> E { A = 0x10, B = 0x20 }
enum bit<8> K { X = 0x05, MASK = 0x0F, Y = 0x80 }

header h_t {
    bit<8> a;
    K      k;
    bit<8> r;
}
struct headers_t { h_t h; }
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    action set(bit<8> r) { hdr.h.r = r; }
    table by_value {
        key = { hdr.h.a: ternary; }
        actions = { set; NoAction; }
        const entries = {
            E.A &&& 0xF0 : set(1);
            E.B &&& 0xF0 : set(2);
        }
        default_action = NoAction();
    }
    table by_enum {
        key = { hdr.h.k: ternary; }
        actions = { set; NoAction; }
        const entries = {
            K.X &&& K.MASK : set(3);
            K.Y &&& 0xF0 : set(4);
        }
        default_action = NoAction();
    }
    apply {
        standard_metadata.egress_spec = 1;
        by_value.apply();
        if (hdr.h.r == 0) {
            by_enum.apply();
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t standard_metadata) { apply { } }
control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
