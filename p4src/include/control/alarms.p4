/* alarms.p4 — ECN alarms decided in the data plane, at the speed of packets
 * (instances FabricEgress.alarms and FabricIngress.alarms).
 *
 * Egress (EgressAlarms), for every normal IPv4 packet leaving a port that has an entry in
 * FabricEgress.alarms.config:
 *   set_alarm_levels(window_us, hold_us, min_pkts,
 *                    notice_pm, warning_pm, critical_pm,               raise, per mille
 *                    notice_clear_pm, warning_clear_pm, critical_clear_pm)  clear
 * the port counts, in registers, the packets and the ECN marks this switch made (the
 * packet's own mark from FabricEgress.ecn included) in the current window, and the
 * largest enq_qdepth seen. The mark rate is compared with the levels without division:
 * marks * 1000 >= level_pm * pkts.
 *   - Up at once: after each packet, once the window holds min_pkts packets, the highest
 *     level whose raise threshold the rate reaches; above the level last reported, it is
 *     reported (several levels at once if need be).
 *   - Down at the window's end: the first packet at least window_us after the window
 *     began closes it (it opens the next one). The closed window's rate (0 with fewer
 *     than min_pkts packets, or when the port then was idle for a whole window: that
 *     window says nothing of now) below the clear threshold of the reported level, and
 *     the level held at least hold_us, lowers it to the highest level whose clear
 *     threshold the rate still meets.
 * A report is written to the port's report registers (level, the level before, marks,
 * packets, the window's length so far in microseconds, max queue depth, a sequence
 * number that grows by one per report) and the port's pending bit is set.
 *
 * Carrying the report to ingress: digests exist only in ingress in v1model (BMv2's
 * simple_switch handles learning after ingress only). Two ways, whichever comes first:
 *   - the copy: the packet that decided the report is cloned egress-to-egress (session
 *     CPU_SESSION, whose queue is the CPU port's, not the congested one; field list
 *     FL_ALARM: alarm_copy, alarm_port); FabricEgress recirculates the copy at once, and
 *     its ingress (IngressAlarmReport) sends the report and drops it. Nothing else of
 *     the pipeline sees the copy: no counter, no PacketIn, no PFC accounting. Not when
 *     the packet already asked for an egress clone (a RESUME of PfcEgress: v1model keeps
 *     one per packet), nor without the clone session (BMv2 then clones nothing);
 *   - the next IPv4 packet forwarded to the port, in its ingress.
 * Either sends digest alarm_digest_t (receiver 2) and clears the pending bit, so each
 * report is sent once. Only the latest report of a port is kept; seq tells the
 * controller how many it missed. The ingress also keeps, per port, the level last sent
 * and an epoch that grows with every rise, which FabricIngress.elephants reads to report
 * a port's elephants again when the port is alarmed. Nothing here is read or written
 * over P4Runtime.
 */
#ifndef FABRIC_ALARMS_P4
#define FABRIC_ALARMS_P4

/* Shared by egress (writer) and ingress (reader): declared at the top level. */
@name(".FabricEgress.alarms.pending")
register<bit<1>>(PORT_CELLS) alarm_pending;
@name(".FabricEgress.alarms.report_level")
register<bit<8>>(PORT_CELLS) alarm_report_level;
@name(".FabricEgress.alarms.report_prev_level")
register<bit<8>>(PORT_CELLS) alarm_report_prev_level;
@name(".FabricEgress.alarms.report_marks")
register<bit<32>>(PORT_CELLS) alarm_report_marks;
@name(".FabricEgress.alarms.report_pkts")
register<bit<32>>(PORT_CELLS) alarm_report_pkts;
@name(".FabricEgress.alarms.report_window_us")
register<bit<32>>(PORT_CELLS) alarm_report_window_us;
@name(".FabricEgress.alarms.report_max_qdepth")
register<bit<32>>(PORT_CELLS) alarm_report_max_qdepth;
@name(".FabricEgress.alarms.report_seq")
register<bit<32>>(PORT_CELLS) alarm_report_seq;

/* Kept by the ingress reporter, read by FabricIngress.elephants. */
@name(".FabricIngress.alarms.level")
register<bit<8>>(PORT_CELLS) alarm_sent_level;
@name(".FabricIngress.alarms.epoch")
register<bit<32>>(PORT_CELLS) alarm_epoch;

control EgressAlarms(inout headers_t hdr, inout fabric_metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    register<bit<48>>(PORT_CELLS) window_start;
    register<bit<32>>(PORT_CELLS) window_marks;
    register<bit<32>>(PORT_CELLS) window_pkts;
    register<bit<32>>(PORT_CELLS) window_max_qdepth;
    register<bit<8>>(PORT_CELLS) level;
    register<bit<48>>(PORT_CELLS) level_since;

    bit<48> cfg_window_us = 0;
    bit<48> cfg_hold_us = 0;
    bit<32> cfg_min_pkts = 0;
    bit<32> raise1 = 0;
    bit<32> raise2 = 0;
    bit<32> raise3 = 0;
    bit<32> clear1 = 0;
    bit<32> clear2 = 0;
    bit<32> clear3 = 0;

    action set_alarm_levels(bit<32> window_us, bit<32> hold_us, bit<16> min_pkts,
                            bit<16> notice_pm, bit<16> warning_pm, bit<16> critical_pm,
                            bit<16> notice_clear_pm, bit<16> warning_clear_pm,
                            bit<16> critical_clear_pm) {
        cfg_window_us = (bit<48>) window_us;
        cfg_hold_us = (bit<48>) hold_us;
        cfg_min_pkts = (bit<32>) min_pkts;
        raise1 = (bit<32>) notice_pm;
        raise2 = (bit<32>) warning_pm;
        raise3 = (bit<32>) critical_pm;
        clear1 = (bit<32>) notice_clear_pm;
        clear2 = (bit<32>) warning_clear_pm;
        clear3 = (bit<32>) critical_clear_pm;
    }

    table config {
        key = { standard_metadata.egress_port: exact; }
        actions = { set_alarm_levels; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    apply {
        if (standard_metadata.instance_type == INSTANCE_NORMAL && hdr.ipv4.isValid()) {
            if (config.apply().hit) {
                bit<32> port = (bit<32>) standard_metadata.egress_port;
                bit<48> now = standard_metadata.egress_global_timestamp;
                bit<32> depth = (bit<32>) standard_metadata.enq_qdepth;
                bit<32> mark = (bit<32>) meta.ecn_marked;

                bit<48> start;
                bit<32> marks;
                bit<32> pkts;
                bit<32> maxq;
                bit<8> cur;
                bit<48> since;
                window_start.read(start, port);
                window_marks.read(marks, port);
                window_pkts.read(pkts, port);
                window_max_qdepth.read(maxq, port);
                level.read(cur, port);
                level_since.read(since, port);

                bit<8> new_level = cur;
                bit<32> r_marks = 0;
                bit<32> r_pkts = 0;
                bit<32> r_maxq = 0;
                bit<48> r_len = 0;

                if (start != 0 && now - start >= cfg_window_us) {
                    /* This packet closes the window: may the level come down? */
                    bit<32> m = marks;
                    if (pkts < cfg_min_pkts || now - start >= cfg_window_us + cfg_window_us) {
                        m = 0;      /* too few packets, or a whole window idle since: no congestion now */
                    }
                    bit<32> lhs = m * 1000;
                    bool below = (cur == 3 && lhs < clear3 * pkts)
                              || (cur == 2 && lhs < clear2 * pkts)
                              || (cur == 1 && lhs < clear1 * pkts);
                    if (cur != 0 && below && now - since >= cfg_hold_us) {
                        if (cur > 2 && lhs >= clear2 * pkts) {
                            new_level = 2;
                        } else if (cur > 1 && lhs >= clear1 * pkts) {
                            new_level = 1;
                        } else {
                            new_level = 0;
                        }
                    }
                    r_marks = marks;
                    r_pkts = pkts;
                    r_maxq = maxq;
                    r_len = now - start;
                    start = 0;
                }
                if (start == 0) {
                    /* A new window opens with this packet (0 is never a start time). */
                    start = now;
                    if (start == 0) {
                        start = 1;
                    }
                    marks = 0;
                    pkts = 0;
                    maxq = 0;
                }
                marks = marks + mark;
                pkts = pkts + 1;
                if (depth > maxq) {
                    maxq = depth;
                }
                if (new_level == cur && pkts >= cfg_min_pkts) {
                    /* Up at once, within the window. */
                    bit<32> lhs = marks * 1000;
                    bit<8> up = 0;
                    if (lhs >= raise3 * pkts) {
                        up = 3;
                    } else if (lhs >= raise2 * pkts) {
                        up = 2;
                    } else if (lhs >= raise1 * pkts) {
                        up = 1;
                    }
                    if (up > cur) {
                        new_level = up;
                        r_marks = marks;
                        r_pkts = pkts;
                        r_maxq = maxq;
                        r_len = now - start;
                    }
                }
                window_start.write(port, start);
                window_marks.write(port, marks);
                window_pkts.write(port, pkts);
                window_max_qdepth.write(port, maxq);

                if (new_level != cur) {
                    level.write(port, new_level);
                    level_since.write(port, now);
                    bit<32> seq;
                    alarm_report_seq.read(seq, port);
                    alarm_report_seq.write(port, seq + 1);
                    alarm_report_level.write(port, new_level);
                    alarm_report_prev_level.write(port, cur);
                    alarm_report_marks.write(port, r_marks);
                    alarm_report_pkts.write(port, r_pkts);
                    alarm_report_window_us.write(port, (bit<32>) r_len);
                    alarm_report_max_qdepth.write(port, r_maxq);
                    alarm_pending.write(port, 1);
                    if (meta.e2e_cloned == 0) {
                        /* The copy that carries the report to ingress now. */
                        meta.e2e_cloned = 1;
                        meta.alarm_copy = 1;
                        meta.alarm_port = standard_metadata.egress_port;
                        clone_preserving_field_list(CloneType.E2E, CPU_SESSION, FL_ALARM);
                    }
                }
            }
        }
    }
}

control IngressAlarmReport(inout headers_t hdr, inout fabric_metadata_t meta,
                           inout standard_metadata_t standard_metadata) {
    apply {
        bool carries = false;
        bit<9> out_port = standard_metadata.egress_spec;
        if (standard_metadata.instance_type == INSTANCE_RECIRC) {
            /* An alarm report's copy: it carries its port's report and ends here. */
            carries = meta.alarm_copy == 1;
            out_port = meta.alarm_port;
            mark_to_drop(standard_metadata);
        } else if (meta.bypass == 0 && meta.dropped == 0 && hdr.ipv4.isValid()
                && standard_metadata.egress_spec != DROP_PORT) {
            carries = true;     /* a packet forwarded to the port */
        }
        if (carries) {
            bit<32> port = (bit<32>) out_port;
            bit<1> pending;
            alarm_pending.read(pending, port);
            if (pending == 1) {
                alarm_pending.write(port, 0);
                bit<8> lvl;
                bit<8> prev;
                bit<32> marks;
                bit<32> pkts;
                bit<32> window_us;
                bit<32> maxq;
                bit<32> seq;
                alarm_report_level.read(lvl, port);
                alarm_report_prev_level.read(prev, port);
                alarm_report_marks.read(marks, port);
                alarm_report_pkts.read(pkts, port);
                alarm_report_window_us.read(window_us, port);
                alarm_report_max_qdepth.read(maxq, port);
                alarm_report_seq.read(seq, port);
                bit<8> sent;
                alarm_sent_level.read(sent, port);
                if (lvl > sent) {
                    bit<32> epoch;
                    alarm_epoch.read(epoch, port);
                    alarm_epoch.write(port, epoch + 1);
                }
                alarm_sent_level.write(port, lvl);
                meta.digest_taken = 1;
                digest<alarm_digest_t>(ALARM_DIGEST_RECEIVER, {
                    meta.switch_id,
                    out_port,
                    lvl,
                    prev,
                    marks,
                    pkts,
                    window_us,
                    maxq,
                    seq });
            }
        }
    }
}

#endif
