/* telemetry.p4 — per-port counters and the queue-depth registers the controller polls.
 *
 * IngressTelemetry (FabricIngress.telemetry): rx[ingress_port] (packets and bytes of
 * every arriving frame), drops[ingress_port] (dropped in ingress: no route, no next hop,
 * TTL, bad checksum, unknown EtherType; received PFC frames are not drops).
 * EgressTelemetry (FabricEgress.telemetry): tx[egress_port], pfc_tx[egress_port]
 * (generated PAUSE/RESUME frames), max_qdepth[egress_port] (largest enq_qdepth since
 * the controller last wrote 0), and FabricIngress.sampling.last_qdepth[egress_port]
 * (enq_qdepth of the last packet, read by the sampler in ingress).
 */
#ifndef FABRIC_TELEMETRY_P4
#define FABRIC_TELEMETRY_P4

@name(".FabricIngress.sampling.last_qdepth")
register<bit<32>>(PORT_CELLS) sampling_last_qdepth;

control IngressTelemetry(inout headers_t hdr, inout fabric_metadata_t meta,
                         inout standard_metadata_t standard_metadata) {
    counter(PORT_CELLS, CounterType.packets_and_bytes) rx;
    counter(PORT_CELLS, CounterType.packets_and_bytes) drops;

    apply {
        rx.count((bit<32>) standard_metadata.ingress_port);
        if (meta.is_pfc == 0 && standard_metadata.egress_spec == DROP_PORT) {
            drops.count((bit<32>) standard_metadata.ingress_port);
        }
    }
}

control EgressTelemetry(inout headers_t hdr, inout fabric_metadata_t meta,
                        inout standard_metadata_t standard_metadata) {
    counter(PORT_CELLS, CounterType.packets_and_bytes) tx;
    counter(PORT_CELLS, CounterType.packets_and_bytes) pfc_tx;
    register<bit<32>>(PORT_CELLS) max_qdepth;

    apply {
        bit<32> port = (bit<32>) standard_metadata.egress_port;
        tx.count(port);
        if (meta.pfc_frame == 1) {
            pfc_tx.count(port);
        }
        bit<32> depth = (bit<32>) standard_metadata.enq_qdepth;
        bit<32> max_depth;
        max_qdepth.read(max_depth, port);
        if (depth > max_depth) {
            max_qdepth.write(port, depth);
        }
        sampling_last_qdepth.write(port, depth);
    }
}

#endif
