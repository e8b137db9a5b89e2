/* Lab 01 — ECMP hashing (solution).
 *
 * A leaf with one host port (1) and four uplinks (2..5). Every IPv4 packet that matches
 * a route to an ECMP group leaves on one uplink, chosen by the fabric's published hash
 * model (p4src/hashmodel.py):
 *
 *     H      = crc16(seed ++ ipv4.src ++ ipv4.dst ++ ipv4.protocol ++ udp.src ++ udp.dst)
 *     member = H % size + base          -> members[member] -> egress port
 *
 * Tables (set by the lab's checker over P4Runtime):
 *   MyIngress.config   (keyless)  set_seed(seed)
 *   MyIngress.routes   (lpm dst)  select_group(base, size) | drop
 *   MyIngress.members  (exact)    set_port(port)           | drop
 */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<6>  dscp;
    bit<2>  ecn;
    bit<16> total_len;
    bit<16> identification;
    bit<3>  flags;
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdr_checksum;
    bit<32> src_addr;
    bit<32> dst_addr;
}

header udp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

struct headers_t {
    ethernet_t ethernet;
    ipv4_t     ipv4;
    udp_t      udp;
}

struct metadata_t {
    bit<32> ecmp_seed;
    bit<16> member_base;
    bit<32> member_count;
    bit<16> ecmp_member;
}

parser MyParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            0x0800: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol, hdr.ipv4.frag_offset) {
            (17, 0): parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        packet.extract(hdr.udp);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    action drop() {
        mark_to_drop(standard_metadata);
    }

    action set_seed(bit<32> seed) {
        meta.ecmp_seed = seed;
    }

    table config {
        actions = { set_seed; }
        default_action = set_seed(0);
        size = 1;
    }

    action select_group(bit<16> base, bit<16> size) {
        meta.member_base = base;
        meta.member_count = (bit<32>) size;
    }

    table routes {
        key = { hdr.ipv4.dst_addr: lpm; }
        actions = { select_group; drop; }
        default_action = drop();
        size = 64;
    }

    action set_port(bit<9> port) {
        standard_metadata.egress_spec = port;
    }

    table members {
        key = { meta.ecmp_member: exact; }
        actions = { set_port; drop; }
        default_action = drop();
        size = 64;
    }

    apply {
        if (!hdr.ipv4.isValid()) {
            drop();
            return;
        }
        config.apply();
        if (routes.apply().hit) {
            // The published hash model: the seed first, then the 5-tuple, packed
            // MSB-first; crc16; member = H % size + base.
            hash(meta.ecmp_member, HashAlgorithm.crc16, meta.member_base,
                 { meta.ecmp_seed, hdr.ipv4.src_addr, hdr.ipv4.dst_addr,
                   hdr.ipv4.protocol, hdr.udp.src_port, hdr.udp.dst_port },
                 meta.member_count);
            members.apply();
        }
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply { }
}

control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.udp);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
