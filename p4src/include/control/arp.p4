/* arp.p4 — ARP answered in the data plane.
 *
 * FabricIngress.arp.arp_proxy maps a target IPv4 address (e.g. the rail gateway
 * 10.b.r.254) to the MAC that answers for it; a hit on a request turns the packet into
 * the reply and sends it back out of the ingress port. Any other ARP packet (a miss, a
 * reply, a gratuitous ARP) goes to the controller as a PacketIn with reason PUNT_ARP,
 * within its ingress port's rate: control-plane policing (CoPP).
 *
 * FabricIngress.arp.punt_meter (indexed by ingress port, packets) polices those punts:
 * a GREEN packet goes to the CPU port, a YELLOW or RED one is dropped here and counted in
 * FabricIngress.arp.punt_drops[ingress_port] (and, like every ingress drop, in
 * FabricIngress.telemetry.drops). The controller sets each port's rate (MeterEntry,
 * controller/fabric/puntguard.py); a cell never configured marks every packet GREEN (BMv2
 * and p4sim), so a switch without meter entries punts every ARP packet, as before the
 * policer. Without it a host sending ARP at line rate filled the switch's PacketIn
 * stream (sec-punt-s46, p4sim: 500,000 frames in 3.2 s, the last of 49,201 PacketIns
 * 8.9 s after the flood, GOR's sample digests and the other ports' traffic held up).
 */
#ifndef FABRIC_ARP_P4
#define FABRIC_ARP_P4

control Arp(inout headers_t hdr, inout fabric_metadata_t meta,
            inout standard_metadata_t standard_metadata) {
    meter(PORT_CELLS, MeterType.packets) punt_meter;
    counter(PORT_CELLS, CounterType.packets) punt_drops;

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
            bit<2> color;
            punt_meter.execute_meter<bit<2>>((bit<32>) standard_metadata.ingress_port, color);
            if (color == V1MODEL_METER_COLOR_GREEN) {
                standard_metadata.egress_spec = CPU_PORT;
                meta.punt_reason = PUNT_ARP;
            } else {
                mark_to_drop(standard_metadata);
                meta.dropped = 1;
                punt_drops.count((bit<32>) standard_metadata.ingress_port);
            }
        }
    }
}

#endif
