// A miniature of p4src/fabric.p4 for the hash-model tests: the same fully qualified
// table and action names, action signatures and ECMP hash() call shape as the fabric
// contract (FabricIngress.{switch_info.config, forwarding.routes, forwarding.nexthops,
// ecmp.groups, ecmp.members}), flattened into one control with @name annotations.
// Nothing else (no checksum, TTL, ECN, PFC). Standard P4_16 for v1model.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst_addr; bit<48> src_addr; bit<16> ether_type; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<6> dscp; bit<2> ecn; bit<16> total_len;
    bit<16> identification; bit<3> flags; bit<13> frag_offset; bit<8> ttl;
    bit<8> protocol; bit<16> hdr_checksum; bit<32> src_addr; bit<32> dst_addr;
}
header udp_t { bit<16> src_port; bit<16> dst_port; bit<16> length; bit<16> checksum; }

struct headers_t { ethernet_t ethernet; ipv4_t ipv4; udp_t udp; }
struct metadata_t {
    bit<32> switch_id; bit<8> role; bit<32> ecmp_seed;
    bit<16> nexthop_id; bit<16> ecmp_group_id; bit<16> ecmp_member; bit<1> use_ecmp;
}

parser MiniParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) { 0x0800: parse_ipv4; default: accept; }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol) { 17: parse_udp; default: accept; }
    }
    state parse_udp { pkt.extract(hdr.udp); transition accept; }
}

control MiniVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }

control FabricIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    @name("switch_info.set_switch")
    action set_switch(bit<32> switch_id, bit<8> role, bit<32> ecmp_seed) {
        meta.switch_id = switch_id; meta.role = role; meta.ecmp_seed = ecmp_seed;
    }
    @name("switch_info.config")
    table config { actions = { set_switch; } default_action = set_switch(0, 0, 0); }

    @name("forwarding.drop")
    action drop() { mark_to_drop(std); }
    @name("forwarding.set_nexthop")
    action set_nexthop(bit<16> nexthop_id) { meta.nexthop_id = nexthop_id; }
    @name("forwarding.set_ecmp_group")
    action set_ecmp_group(bit<16> group_id) { meta.ecmp_group_id = group_id; meta.use_ecmp = 1; }
    @name("forwarding.route_to")
    action route_to(bit<9> port, bit<48> src_mac, bit<48> dst_mac) {
        std.egress_spec = port;
        hdr.ethernet.src_addr = src_mac;
        hdr.ethernet.dst_addr = dst_mac;
    }
    @name("forwarding.routes")
    table routes {
        key = { hdr.ipv4.dst_addr : lpm; }
        actions = { set_nexthop; set_ecmp_group; drop; }
        default_action = drop();
    }
    @name("forwarding.nexthops")
    table nexthops {
        key = { meta.nexthop_id : exact; }
        actions = { route_to; drop; }
        default_action = drop();
    }

    @name("ecmp.select_member")
    action select_member(bit<16> base, bit<16> size) {
        bit<16> l4_src = hdr.udp.isValid() ? hdr.udp.src_port : 16w0;   // 0 without UDP (BMv2 reuses PHVs)
        bit<16> l4_dst = hdr.udp.isValid() ? hdr.udp.dst_port : 16w0;
        hash(meta.ecmp_member, HashAlgorithm.crc16, base,
             { meta.ecmp_seed, hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol,
               l4_src, l4_dst }, (bit<32>) size);
    }
    @name("ecmp.set_nexthop")
    action member_nexthop(bit<16> nexthop_id) { meta.nexthop_id = nexthop_id; }
    @name("ecmp.groups")
    table groups { key = { meta.ecmp_group_id : exact; } actions = { select_member; NoAction; } }
    @name("ecmp.members")
    table members { key = { meta.ecmp_member : exact; } actions = { member_nexthop; NoAction; } }

    apply {
        config.apply();
        if (hdr.ipv4.isValid()) {
            routes.apply();
            if (meta.use_ecmp == 1) {
                if (groups.apply().hit) { members.apply(); }
            }
            nexthops.apply();
        } else {
            mark_to_drop(std);
        }
    }
}

control FabricEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    apply { }
}

control MiniCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control MiniDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.ethernet); pkt.emit(hdr.ipv4); pkt.emit(hdr.udp); }
}

V1Switch(MiniParser(), MiniVerify(), FabricIngress(), FabricEgress(), MiniCompute(),
         MiniDeparser()) main;
