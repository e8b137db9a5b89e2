/* arp.p4 — ARP answered in the data plane for the VMs: a request from a VM port for any
 * address but the asker's own is answered with the gateway MAC (NicInfo's vm_gw_mac), so
 * every frame a VM sends reaches this NIC; replies and gratuitous ARP are dropped. The
 * NIC, not the VM, decides where a packet goes (the session's next hop).
 */
#ifndef SMARTNIC_ARP_P4
#define SMARTNIC_ARP_P4

control Arp(inout headers_t hdr, inout smartnic_metadata_t meta,
            inout standard_metadata_t standard_metadata, out bool answered) {
    apply {
        answered = false;
        if (hdr.arp.opcode == ARP_OP_REQUEST
                && hdr.arp.target_proto_addr != hdr.arp.sender_proto_addr) {
            bit<32> asked_ip = hdr.arp.target_proto_addr;
            hdr.ethernet.dst_addr = hdr.arp.sender_hw_addr;
            hdr.ethernet.src_addr = meta.vm_gw_mac;
            hdr.arp.opcode = ARP_OP_REPLY;
            hdr.arp.target_hw_addr = hdr.arp.sender_hw_addr;
            hdr.arp.target_proto_addr = hdr.arp.sender_proto_addr;
            hdr.arp.sender_hw_addr = meta.vm_gw_mac;
            hdr.arp.sender_proto_addr = asked_ip;
            standard_metadata.egress_spec = meta.in_port;
            answered = true;
        }
    }
}

#endif
