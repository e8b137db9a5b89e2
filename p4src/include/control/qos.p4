/* qos.p4 — traffic class from DSCP.
 *
 * FabricIngress.qos.dscp_to_priority sets standard_metadata.priority (the egress queue
 * with --priority-queues) and meta.priority (the PFC class); unknown DSCPs use 0.
 * Typical plan: RoCE data DSCP 26 -> 3, CNP DSCP 48 -> 6.
 */
#ifndef FABRIC_QOS_P4
#define FABRIC_QOS_P4

control Qos(inout headers_t hdr, inout fabric_metadata_t meta,
            inout standard_metadata_t standard_metadata) {
    action set_priority(bit<3> prio) {
        standard_metadata.priority = prio;
        meta.priority = prio;
    }

    table dscp_to_priority {
        key = { hdr.ipv4.dscp: exact; }
        actions = { set_priority; NoAction; }
        default_action = NoAction();
        size = 64;
    }

    apply {
        dscp_to_priority.apply();
    }
}

#endif
