/* metadata.p4 — per-packet state of the SmartNIC pipeline and the TCP digest.
 *
 * The session key (key_*) is the packet's 5-tuple in canonical order: the endpoint
 * (address, port) that compares lower is "lo", so both directions of a connection build
 * the same key; ``dir`` says whether this packet goes lo -> hi (0) or hi -> lo (1).
 * A packet a load-balancer backend sends is keyed by the VIP it answers for (lb_reverse),
 * so the reply builds the key of the request.
 */
#ifndef SMARTNIC_METADATA_P4
#define SMARTNIC_METADATA_P4

/* digest tcp_event_t: a session's TCP state changed (receiver 1). */
struct tcp_event_t {
    bit<24> vni;
    bit<8>  proto;
    bit<32> ip_lo;
    bit<32> ip_hi;
    bit<16> port_lo;
    bit<16> port_hi;
    bit<32> slot;
    bit<8>  old_state;
    bit<8>  new_state;
}

struct smartnic_metadata_t {
    /* the NIC's identity (NicInfo.config) */
    bit<32> my_vtep;
    bit<48> uplink_mac;
    bit<48> underlay_gw_mac;
    bit<48> vm_gw_mac;
    bit<9>  in_port;          /* ingress port, or packet_out.in_port for OP_PIPELINE */
    bit<2>  port_kind;        /* 0 unknown, 1 VM, 2 uplink */
    bit<24> vni;
    bit<1>  software;         /* the port or the VPC is pinned to software forwarding */
    bit<1>  to_cpu;
    bit<7>  punt_reason;
    bit<1>  bypass;           /* a PacketOut OP_EMIT / heartbeat: nothing else applies */
    /* the tenant 5-tuple as seen */
    bit<1>  l4_valid;
    bit<16> l4_src;
    bit<16> l4_dst;
    /* load-balancer normalisation (lb_reverse) */
    bit<1>  from_backend;
    bit<32> key_src_ip;
    bit<16> key_src_port;
    /* the canonical session key */
    bit<8>  key_proto;
    bit<32> key_ip_lo;
    bit<32> key_ip_hi;
    bit<16> key_port_lo;
    bit<16> key_port_hi;
    bit<1>  dir;
    /* the session's action data (session_hit copies it here) */
    bit<8>  verdict;
    bit<16> scope;
    bit<16> version;
    bit<32> slot;
    bit<8>  gen;
    bit<16> nh_lo;
    bit<16> nh_hi;
    bit<8>  nat_side;
    bit<32> nat_ip;
    bit<16> nat_port;
    bit<32> check;
    bit<32> computed_check;
    bit<16> current_version;
    /* forwarding */
    bit<16> nexthop;
    bit<1>  l4_rewritten;     /* NAT changed addresses/ports: recompute the L4 checksum */
    bit<16> l4_len;           /* TCP/UDP length for the pseudo-header */
    bit<1>  encap;
    bit<32> encap_dst_vtep;
}

#endif
