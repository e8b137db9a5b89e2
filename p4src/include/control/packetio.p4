/* packetio.p4 — the CPU port (255).
 *
 * Ingress: a packet_out from the controller leaves on packet_out.egress_port and skips
 * the rest of the pipeline. Egress: every packet for the CPU port (ARP punts, flow
 * samples) gets a packet_in header with the original ingress port and the reason.
 */
#ifndef FABRIC_PACKETIO_P4
#define FABRIC_PACKETIO_P4

control PacketIoIngress(inout headers_t hdr, inout fabric_metadata_t meta,
                        inout standard_metadata_t standard_metadata) {
    apply {
        if (hdr.packet_out.isValid()) {
            standard_metadata.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
            meta.bypass = 1;
        }
    }
}

control PacketIoEgress(inout headers_t hdr, inout fabric_metadata_t meta,
                       inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = meta.ingress_port;
            hdr.packet_in.reason = meta.punt_reason;
        }
    }
}

#endif
