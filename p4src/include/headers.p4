/* headers.p4 — the wire formats the fabric pipeline parses and emits.
 *
 * Ethernet, optional 802.1Q, IPv4 (no options), UDP, RoCEv2 BTH (UDP 4791), ARP
 * (IPv4 over Ethernet), 802.1Qbb PFC MAC-control frames, and the CPU-port controller
 * headers (packet_in / packet_out).
 */
#ifndef FABRIC_HEADERS_P4
#define FABRIC_HEADERS_P4

#include "define.p4"

@controller_header("packet_in")
header packet_in_t {
    bit<9> ingress_port;
    bit<7> reason;          /* PUNT_SAMPLED, PUNT_ARP, PUNT_TTL */
}

@controller_header("packet_out")
header packet_out_t {
    bit<9> egress_port;
    bit<7> pad;
}

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header vlan_t {
    bit<3>  pcp;
    bit<1>  dei;
    bit<12> vid;
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

/* RoCEv2 base transport header (12 bytes). */
header bth_t {
    bit<8>  opcode;
    bit<1>  se;
    bit<1>  migreq;
    bit<2>  pad_cnt;
    bit<4>  tver;
    bit<16> pkey;
    bit<1>  f_res1;
    bit<1>  b_res1;
    bit<6>  resv6;
    bit<24> dst_qp;
    bit<1>  ack_req;
    bit<7>  resv7;
    bit<24> psn;
}

/* ARP for IPv4 over Ethernet (28 bytes). */
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

/* 802.1Qbb priority flow control (after an Ethernet header with type 0x8808). */
header pfc_t {
    bit<16> opcode;                 /* 0x0101 */
    bit<16> class_enable_vector;    /* bit i = priority i */
    bit<16> pause_time_0;
    bit<16> pause_time_1;
    bit<16> pause_time_2;
    bit<16> pause_time_3;
    bit<16> pause_time_4;
    bit<16> pause_time_5;
    bit<16> pause_time_6;
    bit<16> pause_time_7;
}

/* Pads a generated PAUSE (14 + 20 bytes) to the 60-byte minimum frame. */
header pfc_pad_t {
    bit<208> zeros;
}

struct headers_t {
    packet_in_t  packet_in;
    packet_out_t packet_out;
    ethernet_t   ethernet;
    vlan_t       vlan;
    pfc_t        pfc;
    pfc_pad_t    pfc_pad;
    arp_t        arp;
    ipv4_t       ipv4;
    udp_t        udp;
    bth_t        bth;
}

#endif
