/* session_key.p4 — the session key of a tenant packet.
 *
 * 1. lb_reverse: a packet that a load balancer's backend sends from its service address
 *    (VPC, protocol, address, port) is keyed by the VIP it answers for, so the reply
 *    builds the key of the request (the NIC of the backend translates; see sessions.p4).
 * 2. The two endpoints (address, port) are put in canonical order: the one that compares
 *    lower (address first, then port; unsigned) is "lo". Both directions of a connection
 *    build the same key, and ``dir`` records which one this packet is (0: lo -> hi).
 *    The software-centric build (-DFORNAX_BASELINE) keeps the packet's own order: each
 *    direction is a flow of its own, with an entry of its own.
 *
 * The bit-exact model is p4src/smartnic/model.py (canonical_key).
 *
 *   SmartNicIngress.session_key.lb_reverse   key meta.vni, hdr.ipv4.protocol,
 *     hdr.ipv4.src_addr, meta.l4_src (exact)   from_backend(vip: bit<32>, vip_port: bit<16>)
 */
#ifndef SMARTNIC_SESSION_KEY_P4
#define SMARTNIC_SESSION_KEY_P4

control SessionKey(inout headers_t hdr, inout smartnic_metadata_t meta) {
    action from_backend(bit<32> vip, bit<16> vip_port) {
        meta.from_backend = 1;
        meta.key_src_ip = vip;
        meta.key_src_port = vip_port;
    }

    table lb_reverse {
        key = {
            meta.vni: exact;
            hdr.ipv4.protocol: exact;
            hdr.ipv4.src_addr: exact;
            meta.l4_src: exact;
        }
        actions = { from_backend; NoAction; }
        default_action = NoAction();
        size = 4096;
    }

    apply {
        meta.key_src_ip = hdr.ipv4.src_addr;
        meta.key_src_port = meta.l4_src;
        if (meta.port_kind == 1) {
            lb_reverse.apply();
        }
        meta.key_proto = hdr.ipv4.protocol;
#ifdef FORNAX_BASELINE
        meta.dir = 0;
#else
        if (meta.key_src_ip < hdr.ipv4.dst_addr
                || (meta.key_src_ip == hdr.ipv4.dst_addr && meta.key_src_port <= meta.l4_dst)) {
            meta.dir = 0;
        } else {
            meta.dir = 1;
        }
#endif
        if (meta.dir == 0) {
            meta.key_ip_lo = meta.key_src_ip;
            meta.key_port_lo = meta.key_src_port;
            meta.key_ip_hi = hdr.ipv4.dst_addr;
            meta.key_port_hi = meta.l4_dst;
        } else {
            meta.key_ip_lo = hdr.ipv4.dst_addr;
            meta.key_port_lo = meta.l4_dst;
            meta.key_ip_hi = meta.key_src_ip;
            meta.key_port_hi = meta.key_src_port;
        }
    }
}

#endif
