/* source_guard.p4 — IPv4 source guard on a leaf's host-facing ports (what a DC ToR does
 * at the access port: IP source guard, strict uRPF on the host ports).
 *
 * FabricIngress.source_guard.ports marks an ingress port as guarded (guard_port()). On a
 * guarded port an IPv4 packet is forwarded only when (ingress port, IPv4 source) is in
 * FabricIngress.source_guard.sources (allow()); any other IPv4 packet from that port is
 * dropped here, before qos, override, forwarding, ECMP, alarms, elephants and sampling
 * see it, and counted in FabricIngress.source_guard.drops[ingress_port] (and, like every
 * ingress drop, in FabricIngress.telemetry.drops).
 *
 * A port with no entry in `ports` is not guarded: a switch with no guard entries
 * forwards exactly as before (labs, the PTF tests, programs written by hand). ARP,
 * received PFC frames and packet_out never reach this control (fabric.p4 applies it to
 * IPv4 only, after packetio).
 */
#ifndef FABRIC_SOURCE_GUARD_P4
#define FABRIC_SOURCE_GUARD_P4

control SourceGuard(inout headers_t hdr, inout fabric_metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    counter(PORT_CELLS, CounterType.packets_and_bytes) drops;

    action guard_port() { }

    action allow() { }

    table ports {
        key = { standard_metadata.ingress_port: exact; }
        actions = { guard_port; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    table sources {
        key = {
            standard_metadata.ingress_port: exact;
            hdr.ipv4.src_addr: exact;
        }
        actions = { allow; NoAction; }
        default_action = NoAction();
        size = 4096;
    }

    apply {
        if (ports.apply().hit) {
            if (!sources.apply().hit) {
                mark_to_drop(standard_metadata);
                meta.dropped = 1;
                drops.count((bit<32>) standard_metadata.ingress_port);
            }
        }
    }
}

#endif
