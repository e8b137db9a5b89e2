/* fabric.p4 — the Astral-P4 fabric pipeline for v1model (BMv2 simple_switch_grpc, p4sim).
 *
 * One program for both roles: a leaf and a spine differ only in the entries the
 * controller writes (switch_info.config sets the role, the identity and the ECMP seed).
 * This file only wires the per-concern controls of include/control/; each of them
 * documents its tables, and p4src/README.md lists every name for controller writers.
 *
 *   p4c-bm2-ss --arch v1model --p4runtime-files build/fabric.p4info.txtpb \
 *       -o build/fabric.json p4src/fabric.p4
 *   python -m p4sim compile p4src/fabric.p4 --p4info build/fabric.p4info.txtpb \
 *       --config build/fabric.json
 */
#include <core.p4>
#include <v1model.p4>

#include "include/define.p4"
#include "include/headers.p4"
#include "include/metadata.p4"
#include "include/parser.p4"
#include "include/control/checksum.p4"
#include "include/control/switch_info.p4"
#include "include/control/packetio.p4"
#include "include/control/arp.p4"
#include "include/control/source_guard.p4"
#include "include/control/qos.p4"
#include "include/control/override.p4"
#include "include/control/forwarding.p4"
#include "include/control/ecmp.p4"
#include "include/control/admission.p4"
#include "include/control/buffer.p4"
#include "include/control/pfc.p4"
#include "include/control/ecn.p4"
#include "include/control/telemetry.p4"
#include "include/control/sampling.p4"
#include "include/control/alarms.p4"
#include "include/control/elephants.p4"

control FabricIngress(inout headers_t hdr, inout fabric_metadata_t meta,
                      inout standard_metadata_t standard_metadata) {
    SwitchInfo() switch_info;
    PacketIoIngress() packetio;
    Arp() arp;
    SourceGuard() source_guard;
    Qos() qos;
    Override() override;
    Forwarding() forwarding;
    Ecmp() ecmp;
    NextHops() nexthops;
    IngressAlarmReport() alarms;
    Elephants() elephants;
    Sampling() sampling;
    AdmissionIngress() admission;
    SharedBufferIngress() buffer;
    PfcIngress() pfc;
    IngressTelemetry() telemetry;

    apply {
        /* A recirculated packet is an alarm report's copy (alarms.p4): only
         * alarms sees it (it sends the report and drops the copy). */
        bool report_copy = standard_metadata.instance_type == INSTANCE_RECIRC;
        switch_info.apply(meta);
        if (!report_copy) {
            packetio.apply(hdr, meta, standard_metadata);
            if (meta.bypass == 0) {
                if (hdr.arp.isValid()) {
                    arp.apply(hdr, meta, standard_metadata);
                } else if (hdr.ipv4.isValid()) {
                    /* a spoofed source on a guarded host port: dropped before the rest */
                    source_guard.apply(hdr, meta, standard_metadata);
                    if (meta.dropped == 0) {
                        qos.apply(hdr, meta, standard_metadata);
                        override.apply(hdr, meta);
                        forwarding.apply(hdr, meta, standard_metadata);
                        ecmp.apply(hdr, meta, standard_metadata);
                        nexthops.apply(hdr, meta, standard_metadata);
                    }
                } else if (!hdr.pfc.isValid()) {
                    mark_to_drop(standard_metadata);    /* unknown EtherType */
                }
            }
        }
        alarms.apply(hdr, meta, standard_metadata);      /* before elephants: the epoch */
        if (!report_copy) {
            if (meta.bypass == 0 && hdr.ipv4.isValid()) {
                elephants.apply(hdr, meta, standard_metadata);
                sampling.apply(hdr, meta, standard_metadata);
            }
            admission.apply(hdr, meta, standard_metadata); /* before the counts: its drops */
            buffer.apply(hdr, meta, standard_metadata);   /* before pfc: the counts */
            pfc.apply(hdr, meta, standard_metadata);
            telemetry.apply(hdr, meta, standard_metadata);
        }
    }
}

control FabricEgress(inout headers_t hdr, inout fabric_metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    AdmissionEgress() admission;
    SharedBufferEgress() buffer;
    PfcEgress() pfc;
    Ecn() ecn;
    EgressAlarms() alarms;
    PacketIoEgress() packetio;
    EgressTelemetry() telemetry;

    apply {
        if (standard_metadata.instance_type == INSTANCE_EGRESS_CLONE && meta.alarm_copy == 1) {
            /* An alarm report's copy (alarms.p4): back to ingress, which sends the
             * report; it never leaves the switch. */
            recirculate_preserving_field_list(FL_ALARM);
        } else {
            admission.apply(hdr, meta, standard_metadata);
            buffer.apply(hdr, meta, standard_metadata);   /* before pfc and ecn */
            pfc.apply(hdr, meta, standard_metadata);
            ecn.apply(hdr, meta, standard_metadata);
            alarms.apply(hdr, meta, standard_metadata);
            packetio.apply(hdr, meta, standard_metadata);
            telemetry.apply(hdr, meta, standard_metadata);
        }
    }
}

V1Switch(FabricParser(), FabricVerifyChecksum(), FabricIngress(), FabricEgress(),
         FabricComputeChecksum(), FabricDeparser()) main;
