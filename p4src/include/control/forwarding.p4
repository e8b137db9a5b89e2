/* forwarding.p4 — IPv4 routing: checksum and TTL checks, LPM routes, next hops.
 *
 * Forwarding (instance FabricIngress.forwarding): drops packets with a bad header
 * checksum or TTL <= 1, decrements the TTL, and looks up routes (skipped when the
 * override table already chose a next hop). A route gives a next hop or an ECMP group.
 *
 * NextHops: the next-hop table, applied after ECMP picked a member. It is a separate
 * control because it must run after FabricIngress.ecmp, but its names keep the
 * forwarding prefix: FabricIngress.forwarding.nexthops / route_to.
 */
#ifndef FABRIC_FORWARDING_P4
#define FABRIC_FORWARDING_P4

control Forwarding(inout headers_t hdr, inout fabric_metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    action set_nexthop(bit<16> nexthop_id) {
        meta.nexthop_id = nexthop_id;
        meta.has_nexthop = 1;
    }

    action set_ecmp_group(bit<16> group_id) {
        meta.ecmp_group_id = group_id;
        meta.has_ecmp_group = 1;
    }

    action drop() {
        mark_to_drop(standard_metadata);
        meta.dropped = 1;
    }

    table routes {
        key = { hdr.ipv4.dst_addr: lpm; }
        actions = { set_nexthop; set_ecmp_group; drop; }
        default_action = drop();
        size = 4096;
    }

    apply {
        if (standard_metadata.checksum_error == 1) {
            drop();
        } else if (hdr.ipv4.ttl <= 1) {
            drop();
        } else {
            hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
            if (meta.has_nexthop == 0) {
                routes.apply();
            }
        }
    }
}

control NextHops(inout headers_t hdr, inout fabric_metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    @name(".FabricIngress.forwarding.route_to")
    action route_to(bit<9> port, bit<48> src_mac, bit<48> dst_mac) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.src_addr = src_mac;
        hdr.ethernet.dst_addr = dst_mac;
    }

    @name(".FabricIngress.forwarding.nexthops")
    table nexthops {
        key = { meta.nexthop_id: exact; }
        actions = { route_to; NoAction; }
        default_action = NoAction();
        size = 1024;
    }

    apply {
        if (meta.dropped == 0) {
            if (meta.has_nexthop == 0 || !nexthops.apply().hit) {
                mark_to_drop(standard_metadata);
                meta.dropped = 1;
            }
        }
    }
}

#endif
