/* admission.p4 — the program's egress queue limit: a packet its egress queue cannot take
 * is dropped in ingress, before the PFC occupancy (pfc.p4) and the shared buffer
 * (buffer.p4) count it.
 *
 * Why: pfc.p4 and buffer.p4 add a packet in ingress and take it off when it leaves
 * egress. A packet the target's egress queue tail-drops never reaches egress and left
 * its count behind for good (BMv2's and p4sim's queues hold 64 packets). A host could
 * make that happen at will: PAUSE frames from it hold its leaf's queue toward it, that
 * queue tail-drops what the spines send it, and each drop left +1 on the leaf's uplink
 * occupancy cells (live, 5 s of PAUSE from b1s1: 735 and 1,224 on b1r0l0's two uplinks,
 * `paused` stuck at 1): the leaf never paused its spines again (the lossless class lost
 * PFC for every host of the leaf), and in the dynamic mode the pool shrank for every port.
 *
 * FabricIngress.admission.config (keyless): set_queue_limit(queue_pkts) — at most
 *   queue_pkts packets of one egress queue (egress port, priority) between ingress and
 *   the end of egress. Default NoAction: no limit (the target's queue tail-drops, as before).
 * Ingress (FabricIngress.admission), a forwarded IPv4 packet (not dropped, not a
 *   packet_out): queued[egress_port * 8 + priority] < queue_pkts → +1, the packet goes
 *   on; otherwise it is dropped (mark_to_drop) and counted in drops[egress_port] (one cell
 *   per port: a Read of every counter stays small), not in
 *   FabricIngress.telemetry.drops (it stands for the queue's own tail drop, which no
 *   pipeline counter saw either).
 * Egress (FabricEgress.admission), the same packet leaving (INSTANCE_NORMAL): -1.
 *
 * With queue_pkts at most the target's queue depth, the queue never holds more packets
 * of the program's count than it can take, so the target never tail-drops one of them
 * and every count is taken off again. Frames the program does not count (PFC frames,
 * packet_outs, alarm reports, clones) share the queues; with queue_pkts equal to the
 * depth, one of them in a full queue can still push a counted packet out (rare: they are
 * a few frames per pause or report).
 *
 * The register is used by ingress and egress, so it is declared at the top level with
 * the name FabricIngress.admission.queued.
 */
#ifndef FABRIC_ADMISSION_P4
#define FABRIC_ADMISSION_P4

@name(".FabricIngress.admission.queued")
register<bit<32>>(PFC_CELLS) admission_queued;

control AdmissionIngress(inout headers_t hdr, inout fabric_metadata_t meta,
                         inout standard_metadata_t standard_metadata) {
    counter(PORT_CELLS, CounterType.packets) drops;

    action set_queue_limit(bit<32> queue_pkts) {
        meta.adm_on = 1;
        meta.adm_limit = queue_pkts;
    }

    table config {
        actions = { set_queue_limit; NoAction; }
        default_action = NoAction();
        size = 1;
    }

    apply {
        if (meta.dropped == 0 && meta.bypass == 0 && hdr.ipv4.isValid()
                && standard_metadata.egress_spec != DROP_PORT) {
            config.apply();
            if (meta.adm_on == 1) {
                bit<32> index = (((bit<32>) standard_metadata.egress_spec) << 3)
                                + (bit<32>) meta.priority;
                bit<32> queued;
                admission_queued.read(queued, index);
                if (queued >= meta.adm_limit) {
                    drops.count((bit<32>) standard_metadata.egress_spec);   /* before the drop sets it */
                    mark_to_drop(standard_metadata);
                    meta.dropped = 1;
                    meta.adm_refused = 1;
                } else {
                    admission_queued.write(index, queued + 1);
                    meta.adm_counted = 1;
                    meta.adm_index = index;
                }
            }
        }
    }
}

control AdmissionEgress(inout headers_t hdr, inout fabric_metadata_t meta,
                        inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.instance_type == INSTANCE_NORMAL && meta.adm_counted == 1) {
            bit<32> queued;
            admission_queued.read(queued, meta.adm_index);
            if (queued > 0) {
                queued = queued - 1;
            }
            admission_queued.write(meta.adm_index, queued);
        }
    }
}

#endif
