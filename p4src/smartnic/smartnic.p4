/* smartnic.p4 — FORNAX's SmartNIC pipeline for v1model (BMv2 simple_switch_grpc, p4sim):
 * hardware-centric session management for a VPC.
 *
 * Port 1 is the fabric uplink (VXLAN underlay), ports 2..254 the server's VMs, 255 the
 * CPU port. A tenant packet builds its session key (both directions the same key), hits
 * its session, is checked (check code, policy version), updates the connection's TCP
 * state (reported by digest on every change) and is forwarded as the session says. A
 * miss, a stale or corrupt entry, and whatever is pinned to software reach the manager as
 * a PacketIn with the reason: nothing is dropped silently. This file only wires the
 * per-concern controls of include/control/; p4src/smartnic/README.md lists every name.
 *
 *   python -m p4sim compile p4src/smartnic/smartnic.p4 --p4info build/smartnic.p4info.txtpb \
 *       --config build/smartnic.json
 *   p4c-bm2-ss --arch v1model --p4runtime-files build/smartnic.p4info.txtpb \
 *       -o build/smartnic.json p4src/smartnic/smartnic.p4
 *
 * Builds: -DFORNAX_BASELINE (the software-centric comparison: one entry per direction, no
 * check code, no version, no TCP state) and -DSESSION_TABLE_SIZE=N (fornax/build.py).
 */
#include <core.p4>
#include <v1model.p4>

#include "include/define.p4"
#include "include/headers.p4"
#include "include/metadata.p4"
#include "include/parser.p4"
#include "include/control/checksum.p4"
#include "include/control/nic_info.p4"
#include "include/control/packetio.p4"
#include "include/control/ports.p4"
#include "include/control/arp.p4"
#include "include/control/session_key.p4"
#include "include/control/sessions.p4"
#ifndef FORNAX_BASELINE
#include "include/control/tcp_state.p4"
#endif
#include "include/control/forward.p4"

control SmartNicIngress(inout headers_t hdr, inout smartnic_metadata_t meta,
                        inout standard_metadata_t standard_metadata) {
    /* drops and punts by kind: indices PUNT_* (1..7) and EV_* (8..) of define.p4 */
    counter(EVENT_COUNTERS, CounterType.packets) events;
    NicInfo() nic_info;
    PacketIoIngress() packetio;
    Ports() ports;
    Arp() arp;
    SessionKey() session_key;
    Sessions() sessions;
#ifndef FORNAX_BASELINE
    TcpState() tcp;
#endif
    Forward() forward;

    apply {
        nic_info.apply(meta);
        packetio.apply(hdr, meta, standard_metadata);
        if (meta.bypass == 0) {
            bit<32> drop_event;
            ports.apply(hdr, meta, standard_metadata, drop_event);
            if (drop_event != 0) {
                mark_to_drop(standard_metadata);
                events.count(drop_event);
            } else if (hdr.arp.isValid()) {
                bool answered = false;
                if (meta.port_kind == 1) {
                    arp.apply(hdr, meta, standard_metadata, answered);
                }
                if (answered) {
                    events.count(EV_ARP_ANSWERED);
                } else {
                    mark_to_drop(standard_metadata);
                    events.count(EV_L2_DROPPED);
                }
            } else if (!hdr.ipv4.isValid()) {
                mark_to_drop(standard_metadata);
                events.count(EV_L2_DROPPED);
            } else if (!hdr.tcp.isValid() && !hdr.udp.isValid()) {
                meta.to_cpu = 1;
                meta.punt_reason = PUNT_OTHER;
            } else if (meta.software == 1) {
                meta.to_cpu = 1;
                meta.punt_reason = PUNT_SOFTWARE;
            } else {
                if (hdr.tcp.isValid()) {
                    meta.l4_src = hdr.tcp.src_port;
                    meta.l4_dst = hdr.tcp.dst_port;
                } else {
                    meta.l4_src = hdr.udp.src_port;
                    meta.l4_dst = hdr.udp.dst_port;
                }
                session_key.apply(hdr, meta);
                bit<7> result;
                sessions.apply(hdr, meta, result);
                if (result != 0) {
                    meta.to_cpu = 1;
                    meta.punt_reason = result;
                } else if (meta.verdict == VERDICT_ALLOW) {
#ifndef FORNAX_BASELINE
                    if (hdr.tcp.isValid()) {
                        bool reported;
                        tcp.apply(hdr, meta, reported);
                        if (reported) {
                            events.count(EV_TCP_DIGEST);
                        }
                    }
#endif
                    bool routed;
                    forward.apply(hdr, meta, standard_metadata, routed);
                    if (!routed) {
                        meta.to_cpu = 1;
                        meta.punt_reason = PUNT_NO_ROUTE;
                    }
                } else if (meta.verdict == VERDICT_SOFTWARE) {
                    meta.to_cpu = 1;
                    meta.punt_reason = PUNT_SOFTWARE;
                } else {
                    mark_to_drop(standard_metadata);
                    events.count(EV_DENIED);
                }
            }
            if (meta.to_cpu == 1) {
                standard_metadata.egress_spec = CPU_PORT;
                events.count((bit<32>)meta.punt_reason);
            }
        }
    }
}

control SmartNicEgress(inout headers_t hdr, inout smartnic_metadata_t meta,
                       inout standard_metadata_t standard_metadata) {
    PacketIoEgress() packetio;

    apply {
        packetio.apply(hdr, meta, standard_metadata);
    }
}

V1Switch(SmartNicParser(), SmartNicVerifyChecksum(), SmartNicIngress(), SmartNicEgress(),
         SmartNicComputeChecksum(), SmartNicDeparser()) main;
