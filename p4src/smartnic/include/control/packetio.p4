/* packetio.p4 — the CPU port (255).
 *
 * Ingress: a PacketOut with op OP_EMIT leaves on packet_out.egress_port untouched; with
 * OP_HEARTBEAT it goes straight back to the CPU (reason PUNT_HEARTBEAT), through ingress
 * and egress: a hung pipeline returns no heartbeat; with OP_PIPELINE the frame is
 * processed as if it had arrived on packet_out.in_port (the parser already read it so).
 * Egress: a packet for the CPU port gets the packet_in header (port, reason, VNI).
 */
#ifndef SMARTNIC_PACKETIO_P4
#define SMARTNIC_PACKETIO_P4

control PacketIoIngress(inout headers_t hdr, inout smartnic_metadata_t meta,
                        inout standard_metadata_t standard_metadata) {
    apply {
        if (hdr.packet_out.isValid()) {
            if (hdr.packet_out.op == OP_EMIT) {
                standard_metadata.egress_spec = hdr.packet_out.egress_port;
                meta.bypass = 1;
            } else if (hdr.packet_out.op == OP_HEARTBEAT) {
                standard_metadata.egress_spec = CPU_PORT;
                meta.punt_reason = PUNT_HEARTBEAT;
                meta.bypass = 1;
            } else if (hdr.packet_out.op != OP_PIPELINE) {
                mark_to_drop(standard_metadata);
                meta.bypass = 1;
            }
            hdr.packet_out.setInvalid();
        }
    }
}

control PacketIoEgress(inout headers_t hdr, inout smartnic_metadata_t meta,
                       inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = meta.in_port;
            hdr.packet_in.reason = meta.punt_reason;
            hdr.packet_in.vni = meta.vni;
        }
    }
}

#endif
