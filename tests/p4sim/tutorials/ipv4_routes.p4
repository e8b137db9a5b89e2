// A tutorials-shaped exercise program, written for p4sim's tutorials tests: IPv4 forwarding
// by longest prefix. A route rewrites the Ethernet addresses (the old destination becomes
// the source, the route gives the next hop's), decrements the TTL (with the header
// checksum updated) and picks the egress port; no route (or no IPv4) drops the packet.
#include <core.p4>
#include <v1model.p4>

typedef bit<48> mac_t;
typedef bit<32> ipv4_addr_t;
typedef bit<9>  port_t;

const bit<16> ETHERTYPE_IPV4 = 0x0800;

header ethernet_h {
    mac_t     dst;
    mac_t     src;
    bit<16>   ether_type;
}

header ipv4_h {
    bit<4>      version;
    bit<4>      ihl;
    bit<8>      tos;
    bit<16>     total_len;
    bit<16>     identification;
    bit<3>      flags;
    bit<13>     frag_offset;
    bit<8>      ttl;
    bit<8>      protocol;
    bit<16>     hdr_checksum;
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
}

struct headers_t {
    ethernet_h ethernet;
    ipv4_h     ipv4;
}

struct meta_t { }

parser RouteParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                   inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition accept;
    }
}

control RouteVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control RouteIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    action drop() {
        mark_to_drop(std);
    }
    action forward(mac_t next_hop_mac, port_t port) {
        hdr.ethernet.src = hdr.ethernet.dst;
        hdr.ethernet.dst = next_hop_mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        std.egress_spec = port;
    }
    table routes {
        key = { hdr.ipv4.dst_addr: lpm; }
        actions = { forward; drop; NoAction; }
        size = 1024;
        default_action = drop();
    }
    apply {
        if (hdr.ipv4.isValid()) {
            routes.apply();
        } else {
            drop();
        }
    }
}

control RouteEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    apply { }
}

control RouteChecksum(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.tos, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control RouteDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
    }
}

V1Switch(RouteParser(), RouteVerify(), RouteIngress(), RouteEgress(), RouteChecksum(),
         RouteDeparser()) main;
