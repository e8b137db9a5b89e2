/* override.p4 — per-flow pinning, the controller's fallback for hosts whose UDP source
 * port cannot be changed.
 *
 * FabricIngress.override.flows matches the exact 5-tuple; a hit chooses the next hop
 * directly and bypasses routes and ECMP (TTL and MAC rewrite still apply).
 */
#ifndef FABRIC_OVERRIDE_P4
#define FABRIC_OVERRIDE_P4

control Override(inout headers_t hdr, inout fabric_metadata_t meta) {
    action set_nexthop(bit<16> nexthop_id) {
        meta.nexthop_id = nexthop_id;
        meta.has_nexthop = 1;
    }

    table flows {
        key = {
            hdr.ipv4.src_addr: exact;
            hdr.ipv4.dst_addr: exact;
            hdr.ipv4.protocol: exact;
            hdr.udp.src_port: exact;
            hdr.udp.dst_port: exact;
        }
        actions = { set_nexthop; NoAction; }
        default_action = NoAction();
        size = 4096;
    }

    apply {
        if (hdr.udp.isValid()) {
            flows.apply();
        }
    }
}

#endif
