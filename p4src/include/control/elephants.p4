/* elephants.p4 — heavy hitters found in the data plane, per egress port
 * (instance FabricIngress.elephants).
 *
 * FabricIngress.elephants.config, keyed on the egress port forwarding chose:
 *   track(threshold_pkts, window_us, alarm_min_pkts): count the packets of every flow
 *   (egress port, IPv4 source, destination, protocol, UDP source and destination port;
 *   0 for the ports without UDP) in a window of window_us that opens with the flow's
 *   first packet.
 *
 * The flows live in a two-stage table of ELEPHANT_SLOTS cells per stage (registers:
 * a 32-bit fingerprint, the window's start, the count, the alarm epoch last reported),
 * each stage indexed by its own hash of the key, as in HashPipe (SOSR 2017) without
 * the eviction: a packet takes the first stage whose cell holds its flow, or is free
 * (never used, or its window has ended); a flow that finds both cells held by live
 * windows of other flows is not tracked (counted in FabricIngress.elephants.untracked).
 *
 * A flow is reported by digest elephant_digest_t (receiver 3):
 *   - reason 1, when its count reaches threshold_pkts in its window (once per window);
 *   - reason 2, when its port has risen to a new alarm level (FabricIngress.alarms.epoch
 *     grew) since it was last reported, and its count is at alarm_min_pkts or more (and
 *     not exactly threshold_pkts: that packet reports reason 1): the next packet of
 *     every flow of an alarmed port with alarm_min_pkts in its window tells the
 *     controller, with its count and how long its window has run (its rate), so the
 *     controller holds the port's Top-N the moment the alarm arrives, also when the
 *     alarm comes before the elephants have reached threshold_pkts (a collision of new
 *     flows). alarm_min_pkts >= 2 gives every report at least one gap to measure a rate.
 * A packet that already carries a digest (an alarm report) does not report: v1model
 * keeps one digest per packet; the next packet of the flow reports instead.
 */
#ifndef FABRIC_ELEPHANTS_P4
#define FABRIC_ELEPHANTS_P4

control Elephants(inout headers_t hdr, inout fabric_metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    register<bit<32>>(ELEPHANT_SLOTS) fp1;
    register<bit<48>>(ELEPHANT_SLOTS) start1;
    register<bit<32>>(ELEPHANT_SLOTS) count1;
    register<bit<32>>(ELEPHANT_SLOTS) epoch1;
    register<bit<32>>(ELEPHANT_SLOTS) fp2;
    register<bit<48>>(ELEPHANT_SLOTS) start2;
    register<bit<32>>(ELEPHANT_SLOTS) count2;
    register<bit<32>>(ELEPHANT_SLOTS) epoch2;
    counter(PORT_CELLS, CounterType.packets) untracked;

    bit<32> threshold = 0;
    bit<48> cfg_window_us = 0;
    bit<32> alarm_min = 0;

    action track(bit<32> threshold_pkts, bit<32> window_us, bit<32> alarm_min_pkts) {
        threshold = threshold_pkts;
        cfg_window_us = (bit<48>) window_us;
        alarm_min = alarm_min_pkts;
    }

    table config {
        key = { standard_metadata.egress_spec: exact; }
        actions = { track; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    apply {
        if (meta.dropped == 0 && hdr.ipv4.isValid()
                && standard_metadata.egress_spec != DROP_PORT) {
            config.apply();
            if (threshold != 0) {
                bit<32> port = (bit<32>) standard_metadata.egress_spec;
                bit<48> now = standard_metadata.ingress_global_timestamp;
                bit<32> fp;
                bit<32> i1;
                bit<32> i2;
                // ports 0 without a UDP header (BMv2 reuses PHVs: an invalid header's
                // fields hold an earlier packet's values)
                bit<16> l4_src = hdr.udp.isValid() ? hdr.udp.src_port : 16w0;
                bit<16> l4_dst = hdr.udp.isValid() ? hdr.udp.dst_port : 16w0;
                hash(fp, HashAlgorithm.crc32, (bit<32>) 0,
                     { standard_metadata.egress_spec, hdr.ipv4.src_addr, hdr.ipv4.dst_addr,
                       hdr.ipv4.protocol, l4_src, l4_dst },
                     ELEPHANT_FP_SPACE);
                hash(i1, HashAlgorithm.crc16, (bit<32>) 0,
                     { standard_metadata.egress_spec, hdr.ipv4.src_addr, hdr.ipv4.dst_addr,
                       hdr.ipv4.protocol, l4_src, l4_dst },
                     ELEPHANT_SLOTS);
                i2 = fp & (ELEPHANT_SLOTS - 1);
                if (fp == 0) {
                    fp = 1;     /* 0 marks a cell never used */
                }

                bit<32> count = 0;
                bit<48> start = 0;
                bit<32> last_epoch = 0;
                bit<2> stage = 0;

                bit<32> c_fp;
                bit<48> c_start;
                bit<32> c_count;
                bit<32> c_epoch;
                fp1.read(c_fp, i1);
                start1.read(c_start, i1);
                count1.read(c_count, i1);
                epoch1.read(c_epoch, i1);
                bool live = c_fp != 0 && now - c_start < cfg_window_us;
                if (c_fp == fp && live) {
                    stage = 1;
                    count = c_count + 1;
                    start = c_start;
                    last_epoch = c_epoch;
                } else if (!live) {
                    stage = 1;
                    count = 1;
                    start = now;
                } else {
                    fp2.read(c_fp, i2);
                    start2.read(c_start, i2);
                    count2.read(c_count, i2);
                    epoch2.read(c_epoch, i2);
                    live = c_fp != 0 && now - c_start < cfg_window_us;
                    if (c_fp == fp && live) {
                        stage = 2;
                        count = c_count + 1;
                        start = c_start;
                        last_epoch = c_epoch;
                    } else if (!live) {
                        stage = 2;
                        count = 1;
                        start = now;
                    }
                }

                if (stage == 0) {
                    untracked.count(port);
                } else {
                    bit<8> reason = 0;
                    bit<8> lvl;
                    bit<32> epoch;
                    alarm_sent_level.read(lvl, port);
                    alarm_epoch.read(epoch, port);
                    if (count == threshold) {
                        reason = ELEPHANT_CROSSED;
                    } else if (count >= alarm_min && lvl != 0 && last_epoch != epoch) {
                        reason = ELEPHANT_ALARMED;
                    }
                    if (reason != 0 && meta.digest_taken == 0) {
                        meta.digest_taken = 1;
                        last_epoch = epoch;
                        digest<elephant_digest_t>(ELEPHANT_DIGEST_RECEIVER, {
                            meta.switch_id,
                            standard_metadata.egress_spec,
                            hdr.ipv4.src_addr,
                            hdr.ipv4.dst_addr,
                            hdr.ipv4.protocol,
                            l4_src,
                            l4_dst,
                            reason,
                            lvl,
                            count,
                            (bit<32>) (now - start) });
                    }
                    if (stage == 1) {
                        fp1.write(i1, fp);
                        start1.write(i1, start);
                        count1.write(i1, count);
                        epoch1.write(i1, last_epoch);
                    } else {
                        fp2.write(i2, fp);
                        start2.write(i2, start);
                        count2.write(i2, count);
                        epoch2.write(i2, last_epoch);
                    }
                }
            }
        }
    }
}

#endif
