/* telemetry.p4 — per-port counters the controller polls, and the last queue depth the
 * sampler reports.
 *
 * IngressTelemetry (FabricIngress.telemetry): rx[ingress_port] (packets and bytes of
 * every arriving frame), drops[ingress_port] (dropped in ingress: no route, no next hop,
 * TTL, bad checksum, unknown EtherType, a source the guard refused (source_guard.p4);
 * received PFC frames and the egress queue limit's drops (admission.p4, counted there)
 * are not drops).
 * EgressTelemetry (FabricEgress.telemetry): tx[egress_port], pfc_tx[egress_port]
 * (generated PAUSE/RESUME frames) and qdepth_hist[egress_port * QDEPTH_BINS + bin]: every
 * frame tx counts, counted once more in the bin of the queue depth it saw on arrival
 * (enq_qdepth, 4 packets per bin, the last bin open-ended; define.p4). The controller
 * reads the bins of a port twice and takes the difference: how deep the queue was in
 * between, with no register to read or clear (BMv2's P4Runtime server reads none).
 * FabricIngress.sampling.last_qdepth[egress_port] (enq_qdepth of the last packet) is a
 * register written here and read by the sampler in ingress: the data plane's own state.
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
        if (meta.is_pfc == 0 && meta.adm_refused == 0
                && standard_metadata.egress_spec == DROP_PORT) {
            drops.count((bit<32>) standard_metadata.ingress_port);
        }
    }
}

control EgressTelemetry(inout headers_t hdr, inout fabric_metadata_t meta,
                        inout standard_metadata_t standard_metadata) {
    counter(PORT_CELLS, CounterType.packets_and_bytes) tx;
    counter(PORT_CELLS, CounterType.packets_and_bytes) pfc_tx;
    counter(QDEPTH_HIST_CELLS, CounterType.packets) qdepth_hist;

    apply {
        bit<32> port = (bit<32>) standard_metadata.egress_port;
        tx.count(port);
        if (meta.pfc_frame == 1) {
            pfc_tx.count(port);
        }
        bit<32> depth = (bit<32>) standard_metadata.enq_qdepth;
        bit<32> bin = depth >> QDEPTH_BIN_SHIFT;
        if (bin > QDEPTH_BINS - 1) {
            bin = QDEPTH_BINS - 1;
        }
        qdepth_hist.count(port * QDEPTH_BINS + bin);
        sampling_last_qdepth.write(port, depth);
    }
}

#endif
