/* arp.p4 — ARP answered in the data plane.
 *
 * FabricIngress.arp.arp_proxy maps a target IPv4 address (e.g. the rail gateway
 * 10.b.r.254) to the MAC that answers for it; a hit on a request turns the packet into
 * the reply and sends it back out of the ingress port. Any other ARP packet (a miss, a
 * reply, a gratuitous ARP) goes to the controller as a PacketIn with reason PUNT_ARP.
 */
#ifndef FABRIC_ARP_P4
#define FABRIC_ARP_P4

control Arp(inout headers_t hdr, inout fabric_metadata_t meta,
            inout standard_metadata_t standard_metadata) {
    action arp_reply(bit<48> mac) {
        bit<32> asked_ip = hdr.arp.target_proto_addr;
        hdr.ethernet.dst_addr = hdr.arp.sender_hw_addr;
        hdr.ethernet.src_addr = mac;
        hdr.arp.opcode = ARP_OP_REPLY;
        hdr.arp.target_hw_addr = hdr.arp.sender_hw_addr;
        hdr.arp.target_proto_addr = hdr.arp.sender_proto_addr;
        hdr.arp.sender_hw_addr = mac;
        hdr.arp.sender_proto_addr = asked_ip;
        standard_metadata.egress_spec = standard_metadata.ingress_port;
    }

    table arp_proxy {
        key = { hdr.arp.target_proto_addr: exact; }
        actions = { arp_reply; NoAction; }
        default_action = NoAction();
        size = 1024;
    }

    apply {
        bool answered = false;
        if (hdr.arp.opcode == ARP_OP_REQUEST) {
            answered = arp_proxy.apply().hit;
        }
        if (!answered) {
            standard_metadata.egress_spec = CPU_PORT;
            meta.punt_reason = PUNT_ARP;
        }
    }
}

#endif
