// A serializable enum converts to its underlying type implicitly (P4_16 1.2.x, p4-spec
// issue 774): assigned to a bit<16>, passed to a bit<8> parameter, compared with a bit<16>
// value, and as a select case label for a bit<16> key.
#include <core.p4>
#include <v1model.p4>

enum bit<16> EtherType { IPV4 = 0x0800, VLAN = 0x8100 }
enum bit<8> Tag { HIT = 0x11 }

header h_t {
    bit<16> etype;
    bit<16> copy;
    bit<8>  tag;
    bit<8>  same;
}
struct headers_t { h_t h; }
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.etype) {
            EtherType.IPV4: accept;
            default: reject;
        }
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    action set_tag(bit<8> t) { hdr.h.tag = t; }
    apply {
        standard_metadata.egress_spec = 1;
        EtherType e = EtherType.VLAN;
        hdr.h.copy = e;
        set_tag(Tag.HIT);
        hdr.h.same = (EtherType.IPV4 == hdr.h.etype) ? 8w1 : 8w0;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t standard_metadata) { apply { } }
control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
