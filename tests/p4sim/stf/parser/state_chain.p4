// Three-level parse graph (eth -> ip -> udp) chosen by select; ingress edits only the headers
// that were parsed.
#include <core.p4>
#include <v1model.p4>

header eth_t {
    bit<16> etype;
}
header ip_t {
    bit<8> ver_ihl;
    bit<8> proto;
    bit<8> ttl;
}
header udp_t {
    bit<16> sport;
    bit<16> dport;
}
struct headers_t {
    eth_t eth;
    ip_t  ip;
    udp_t udp;
}
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.etype) {
            0x0800: parse_ip;
            default: accept;
        }
    }
    state parse_ip {
        pkt.extract(hdr.ip);
        transition select(hdr.ip.proto) {
            17: parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        if (hdr.ip.isValid()) {
            hdr.ip.ttl = hdr.ip.ttl - 1;
        }
        if (hdr.udp.isValid()) {
            bit<16> tmp = hdr.udp.sport;
            hdr.udp.sport = hdr.udp.dport;
            hdr.udp.dport = tmp;
        }
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
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ip);
        pkt.emit(hdr.udp);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
