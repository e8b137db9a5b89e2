/* headers.p4 — the wire formats of the SmartNIC pipeline.
 *
 * Underlay (uplink only): Ethernet, IPv4, UDP, VXLAN (RFC 7348: 8 bytes, the I flag and a
 * 24-bit VNI; UDP destination port 4789). Tenant (a VM's frame, inside VXLAN on the
 * uplink): Ethernet, ARP or IPv4 (no options parsed), TCP (the fixed 20 bytes; options
 * stay in the payload) or UDP. The CPU port's packet_in / packet_out.
 */
#ifndef SMARTNIC_HEADERS_P4
#define SMARTNIC_HEADERS_P4

#include "define.p4"

@controller_header("packet_in")
header packet_in_t {
    bit<9>  ingress_port;   /* the port the frame arrived on (or packet_out.in_port) */
    bit<7>  reason;         /* PUNT_* */
    bit<24> vni;            /* the VPC, when known (0 otherwise) */
}

@controller_header("packet_out")
header packet_out_t {
    bit<9> egress_port;     /* OP_EMIT: where the frame leaves */
    bit<9> in_port;         /* OP_PIPELINE / OP_HEARTBEAT: the port it is processed as from */
    bit<6> op;              /* OP_* */
}

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

header tcp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<32> seq_no;
    bit<32> ack_no;
    bit<4>  data_offset;
    bit<4>  res;
    bit<8>  flags;          /* CWR ECE URG ACK PSH RST SYN FIN */
    bit<16> window;
    bit<16> checksum;
    bit<16> urgent_ptr;
}

header vxlan_t {
    bit<8>  flags;
    bit<24> reserved;
    bit<24> vni;
    bit<8>  reserved2;
}

header arp_t {
    bit<16> hw_type;
    bit<16> proto_type;
    bit<8>  hw_addr_len;
    bit<8>  proto_addr_len;
    bit<16> opcode;
    bit<48> sender_hw_addr;
    bit<32> sender_proto_addr;
    bit<48> target_hw_addr;
    bit<32> target_proto_addr;
}

struct headers_t {
    packet_in_t  packet_in;
    packet_out_t packet_out;
    ethernet_t   u_ethernet;     /* underlay */
    ipv4_t       u_ipv4;
    udp_t        u_udp;
    vxlan_t      vxlan;
    ethernet_t   ethernet;       /* tenant */
    arp_t        arp;
    ipv4_t       ipv4;
    tcp_t        tcp;
    udp_t        udp;
}

#endif
