/* forward.p4 — where an allowed packet goes: the session's next hop towards the packet's
 * destination endpoint (nh_hi when dir is 0, nh_lo when 1), the load balancer's
 * translation when this NIC serves the backend, VXLAN decapsulation of what came from the
 * uplink and encapsulation of what leaves on it.
 *
 * Load balancer (nat_side != NAT_NONE: the VIP endpoint of the key is translated here,
 * at the backend's NIC): a packet towards the VIP gets the backend's address and port
 * (nat_ip, nat_port); a packet the backend sends (lb_reverse matched) gets the VIP back
 * as its source. Addresses or ports changed: the TCP/UDP checksum is recomputed.
 *
 * Encapsulation (RFC 7348): outer Ethernet (uplink MAC -> underlay next hop), IPv4 (this
 * VTEP -> the next hop's VTEP, TTL 64, DF), UDP (source port from a crc16 of the session
 * key in 49152..65535, destination 4789, checksum 0) and VXLAN (I flag, the VNI).
 *
 *   SmartNicIngress.forward.nexthops  key meta.nexthop (exact)
 *     to_vm(port: bit<9>, vm_mac: bit<48>) | to_remote(vtep_ip: bit<32>, vm_mac: bit<48>)
 *     default: no_route (PUNT_NO_ROUTE)
 */
#ifndef SMARTNIC_FORWARD_P4
#define SMARTNIC_FORWARD_P4

control Forward(inout headers_t hdr, inout smartnic_metadata_t meta,
                inout standard_metadata_t standard_metadata, out bool routed) {
    action to_vm(bit<9> port, bit<48> vm_mac) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.dst_addr = vm_mac;
        hdr.ethernet.src_addr = meta.vm_gw_mac;
        meta.encap = 0;
    }

    action to_remote(bit<32> vtep_ip, bit<48> vm_mac) {
        standard_metadata.egress_spec = UPLINK_PORT;
        hdr.ethernet.dst_addr = vm_mac;
        hdr.ethernet.src_addr = meta.vm_gw_mac;
        meta.encap = 1;
        meta.encap_dst_vtep = vtep_ip;
    }

    action no_route() {
        meta.encap = 0;
    }

    table nexthops {
        key = { meta.nexthop: exact; }
        actions = { to_vm; to_remote; @defaultonly no_route; }
        default_action = no_route();
        size = 65536;
    }

    apply {
        if (meta.dir == 0) {
            meta.nexthop = meta.nh_hi;
        } else {
            meta.nexthop = meta.nh_lo;
        }
        routed = nexthops.apply().hit;
        if (routed) {
            /* load balancer: translate at the backend's NIC */
            if (meta.nat_side != NAT_NONE) {
                if (meta.from_backend == 1) {
                    hdr.ipv4.src_addr = meta.key_src_ip;
                    if (hdr.tcp.isValid()) {
                        hdr.tcp.src_port = meta.key_src_port;
                    } else {
                        hdr.udp.src_port = meta.key_src_port;
                    }
                    meta.l4_rewritten = 1;
                } else if ((meta.dir == 0 && meta.nat_side == NAT_HI)
                           || (meta.dir == 1 && meta.nat_side == NAT_LO)) {
                    hdr.ipv4.dst_addr = meta.nat_ip;
                    if (hdr.tcp.isValid()) {
                        hdr.tcp.dst_port = meta.nat_port;
                    } else {
                        hdr.udp.dst_port = meta.nat_port;
                    }
                    meta.l4_rewritten = 1;
                }
                if (hdr.udp.isValid() && hdr.udp.checksum == 0) {
                    meta.l4_rewritten = 0;      /* UDP without a checksum keeps none */
                }
                meta.l4_len = hdr.ipv4.total_len - 20;
            }
            /* decapsulate what came from the uplink */
            hdr.u_ethernet.setInvalid();
            hdr.u_ipv4.setInvalid();
            hdr.u_udp.setInvalid();
            hdr.vxlan.setInvalid();
            if (meta.encap == 1) {
                hdr.u_ethernet.setValid();
                hdr.u_ethernet.dst_addr = meta.underlay_gw_mac;
                hdr.u_ethernet.src_addr = meta.uplink_mac;
                hdr.u_ethernet.ether_type = ETHERTYPE_IPV4;
                hdr.u_ipv4.setValid();
                hdr.u_ipv4.version = 4;
                hdr.u_ipv4.ihl = 5;
                hdr.u_ipv4.dscp = hdr.ipv4.dscp;
                hdr.u_ipv4.ecn = 0;
                hdr.u_ipv4.total_len = hdr.ipv4.total_len + 50;
                hdr.u_ipv4.identification = 0;
                hdr.u_ipv4.flags = 2;
                hdr.u_ipv4.frag_offset = 0;
                hdr.u_ipv4.ttl = 64;
                hdr.u_ipv4.protocol = IP_PROTO_UDP;
                hdr.u_ipv4.hdr_checksum = 0;
                hdr.u_ipv4.src_addr = meta.my_vtep;
                hdr.u_ipv4.dst_addr = meta.encap_dst_vtep;
                hdr.u_udp.setValid();
                hash(hdr.u_udp.src_port, HashAlgorithm.crc16, 16w49152,
                     { meta.vni, meta.key_proto, meta.key_ip_lo, meta.key_ip_hi,
                       meta.key_port_lo, meta.key_port_hi },
                     32w16384);
                hdr.u_udp.dst_port = VXLAN_UDP_PORT;
                hdr.u_udp.length = hdr.ipv4.total_len + 30;
                hdr.u_udp.checksum = 0;
                hdr.vxlan.setValid();
                hdr.vxlan.flags = VXLAN_FLAGS_VNI;
                hdr.vxlan.reserved = 0;
                hdr.vxlan.vni = meta.vni;
                hdr.vxlan.reserved2 = 0;
            }
        }
    }
}

#endif
