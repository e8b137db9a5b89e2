/* pfc.p4 — priority flow control modelled in P4 (BMv2 has none).
 *
 * Ingress (instance FabricIngress.pfc):
 *   - a received 802.1Qbb frame is counted in rx_frames[port * 8 + prio] for every
 *     enabled class and dropped (MAC-control frames are never forwarded);
 *   - a forwarded IPv4 packet from a port with thresholds adds 1 to
 *     occupancy[ingress_port * 8 + priority]; reaching xoff_pkts while not paused sets
 *     paused[...] and clones the packet (I2E, session 100 + ingress_port) to become a
 *     PAUSE for that priority with pause_quanta.
 * Egress (PfcEgress): the packet leaving takes 1 off the occupancy; falling to
 * xon_pkts or below while paused clears paused[...] and clones (E2E, same session) a
 * RESUME (pause time 0). A clone carrying meta.pfc_gen is rewritten into the frame:
 * dst 01:80:C2:00:00:01, src FabricEgress.port_macs[egress_port], type 0x8808, opcode
 * 0x0101, class-enable bit prio, pause_time_prio, padded and truncated to 60 bytes.
 *
 * The occupancy and paused registers are shared by ingress and egress, so they are
 * declared at the top level under the names FabricIngress.pfc.occupancy / .paused.
 */
#ifndef FABRIC_PFC_P4
#define FABRIC_PFC_P4

@name(".FabricIngress.pfc.occupancy")
register<bit<32>>(PFC_CELLS) pfc_occupancy;
@name(".FabricIngress.pfc.paused")
register<bit<1>>(PFC_CELLS) pfc_paused;

control PfcIngress(inout headers_t hdr, inout fabric_metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    counter(PFC_CELLS, CounterType.packets) rx_frames;

    action set_thresholds(bit<32> xoff_pkts, bit<32> xon_pkts, bit<16> pause_quanta) {
        meta.pfc_enabled = 1;
        meta.pfc_xoff = xoff_pkts;
        meta.pfc_xon = xon_pkts;
        meta.pfc_quanta = pause_quanta;
    }

    /* Dynamic mode (buffer.p4): the port's XOFF is alpha * free cells of the shared
     * buffer, alpha per priority from the alpha table. */
    action set_dynamic_thresholds(bit<16> pause_quanta) {
        meta.pfc_dynamic = 1;
        meta.pfc_quanta = pause_quanta;
    }

    table thresholds {
        key = { standard_metadata.ingress_port: exact; }
        actions = { set_thresholds; set_dynamic_thresholds; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    /* alpha = 2^(alpha_code - 6); RESUME when the priority group holds at most
     * max(xon_cells, XOFF - xon_offset_cells) (SAI's XON_TH / XON_OFFSET_TH rule). */
    action set_pfc_alpha(bit<4> alpha_code, bit<32> xon_cells, bit<32> xon_offset_cells) {
        meta.pfc_dyn_on = 1;
        meta.pfc_alpha = alpha_code;
        meta.pfc_xon_cells = xon_cells;
        meta.pfc_xon_offset_cells = xon_offset_cells;
    }

    table alpha {
        key = { meta.priority: exact; }
        actions = { set_pfc_alpha; NoAction; }
        default_action = NoAction();   /* no alpha: the priority is lossy, never paused */
        size = 8;
    }

    apply {
        bit<32> base = ((bit<32>) standard_metadata.ingress_port) << 3;
        if (hdr.pfc.isValid()) {
            if (hdr.pfc.opcode == PFC_OPCODE) {
                bit<16> cev = hdr.pfc.class_enable_vector;
                if (cev[0:0] == 1) { rx_frames.count(base); }
                if (cev[1:1] == 1) { rx_frames.count(base + 1); }
                if (cev[2:2] == 1) { rx_frames.count(base + 2); }
                if (cev[3:3] == 1) { rx_frames.count(base + 3); }
                if (cev[4:4] == 1) { rx_frames.count(base + 4); }
                if (cev[5:5] == 1) { rx_frames.count(base + 5); }
                if (cev[6:6] == 1) { rx_frames.count(base + 6); }
                if (cev[7:7] == 1) { rx_frames.count(base + 7); }
            }
            meta.is_pfc = 1;
            mark_to_drop(standard_metadata);
        } else if (meta.dropped == 0 && meta.bypass == 0 && hdr.ipv4.isValid()) {
            thresholds.apply();
            if (meta.pfc_dynamic == 1 && meta.buf_counted == 1) {
                alpha.apply();
                if (meta.pfc_dyn_on == 1) {
                    bit<32> index = base + (bit<32>) meta.priority;
                    meta.pfc_index = index;
                    bit<64> xoff = (((bit<64>) meta.buf_free) << meta.pfc_alpha) >> 6;
                    bit<1> paused;
                    pfc_paused.read(paused, index);
                    if (paused == 0 && ((bit<64>) meta.buf_ing_cells) >= xoff) {
                        pfc_paused.write(index, 1);
                        meta.pfc_gen = 1;
                        meta.pfc_prio = meta.priority;
                        meta.pfc_time = meta.pfc_quanta;
                        clone_preserving_field_list(CloneType.I2E,
                            PFC_SESSION_BASE + (bit<32>) standard_metadata.ingress_port, FL_CLONE);
                    }
                }
            } else if (meta.pfc_enabled == 1) {
                bit<32> index = base + (bit<32>) meta.priority;
                meta.pfc_index = index;
                bit<32> occupancy;
                pfc_occupancy.read(occupancy, index);
                occupancy = occupancy + 1;
                pfc_occupancy.write(index, occupancy);
                bit<1> paused;
                pfc_paused.read(paused, index);
                if (paused == 0 && occupancy >= meta.pfc_xoff) {
                    pfc_paused.write(index, 1);
                    meta.pfc_gen = 1;
                    meta.pfc_prio = meta.priority;
                    meta.pfc_time = meta.pfc_quanta;
                    clone_preserving_field_list(CloneType.I2E,
                        PFC_SESSION_BASE + (bit<32>) standard_metadata.ingress_port, FL_CLONE);
                }
            }
        }
    }
}

control PfcEgress(inout headers_t hdr, inout fabric_metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    @name(".FabricEgress.set_port_mac")
    action set_port_mac(bit<48> mac) {
        hdr.ethernet.src_addr = mac;
    }

    @name(".FabricEgress.port_macs")
    table port_macs {
        key = { standard_metadata.egress_port: exact; }
        actions = { set_port_mac; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    apply {
        if (standard_metadata.instance_type != INSTANCE_NORMAL && meta.pfc_gen == 1) {
            /* This clone becomes the PAUSE (or RESUME) frame. */
            hdr.packet_in.setInvalid();
            hdr.vlan.setInvalid();
            hdr.arp.setInvalid();
            hdr.ipv4.setInvalid();
            hdr.udp.setInvalid();
            hdr.bth.setInvalid();
            hdr.ethernet.setValid();
            hdr.ethernet.dst_addr = PFC_DST_MAC;
            hdr.ethernet.src_addr = 0;
            hdr.ethernet.ether_type = ETHERTYPE_MAC_CONTROL;
            port_macs.apply();
            hdr.pfc.setValid();
            hdr.pfc.opcode = PFC_OPCODE;
            hdr.pfc.class_enable_vector = ((bit<16>) 1) << meta.pfc_prio;
            hdr.pfc.pause_time_0 = 0;
            hdr.pfc.pause_time_1 = 0;
            hdr.pfc.pause_time_2 = 0;
            hdr.pfc.pause_time_3 = 0;
            hdr.pfc.pause_time_4 = 0;
            hdr.pfc.pause_time_5 = 0;
            hdr.pfc.pause_time_6 = 0;
            hdr.pfc.pause_time_7 = 0;
            if (meta.pfc_prio == 0) { hdr.pfc.pause_time_0 = meta.pfc_time; }
            if (meta.pfc_prio == 1) { hdr.pfc.pause_time_1 = meta.pfc_time; }
            if (meta.pfc_prio == 2) { hdr.pfc.pause_time_2 = meta.pfc_time; }
            if (meta.pfc_prio == 3) { hdr.pfc.pause_time_3 = meta.pfc_time; }
            if (meta.pfc_prio == 4) { hdr.pfc.pause_time_4 = meta.pfc_time; }
            if (meta.pfc_prio == 5) { hdr.pfc.pause_time_5 = meta.pfc_time; }
            if (meta.pfc_prio == 6) { hdr.pfc.pause_time_6 = meta.pfc_time; }
            if (meta.pfc_prio == 7) { hdr.pfc.pause_time_7 = meta.pfc_time; }
            hdr.pfc_pad.setValid();
            hdr.pfc_pad.zeros = 0;
            truncate(PFC_FRAME_BYTES);
            meta.pfc_frame = 1;
        } else if (standard_metadata.instance_type == INSTANCE_NORMAL && meta.pfc_enabled == 1) {
            bit<32> occupancy;
            pfc_occupancy.read(occupancy, meta.pfc_index);
            if (occupancy > 0) {
                occupancy = occupancy - 1;
            }
            pfc_occupancy.write(meta.pfc_index, occupancy);
            bit<1> paused;
            pfc_paused.read(paused, meta.pfc_index);
            if (paused == 1 && occupancy <= meta.pfc_xon) {
                pfc_paused.write(meta.pfc_index, 0);
                meta.pfc_gen = 1;
                meta.pfc_prio = meta.priority;
                meta.pfc_time = 0;
                meta.e2e_cloned = 1;
                clone_preserving_field_list(CloneType.E2E,
                    PFC_SESSION_BASE + (bit<32>) meta.ingress_port, FL_CLONE);
            }
        } else if (standard_metadata.instance_type == INSTANCE_NORMAL && meta.pfc_dyn_on == 1) {
            /* dynamic mode: FabricEgress.buffer has taken the packet out of the counts */
            bit<64> xoff = (((bit<64>) meta.buf_free_after) << meta.pfc_alpha) >> 6;
            bit<64> xon = (bit<64>) meta.pfc_xon_cells;
            bit<64> off = (bit<64>) meta.pfc_xon_offset_cells;
            if (xoff > off && xoff - off > xon) {
                xon = xoff - off;
            }
            bit<1> paused;
            pfc_paused.read(paused, meta.pfc_index);
            if (paused == 1 && ((bit<64>) meta.buf_ing_cells) <= xon) {
                pfc_paused.write(meta.pfc_index, 0);
                meta.pfc_gen = 1;
                meta.pfc_prio = meta.priority;
                meta.pfc_time = 0;
                meta.e2e_cloned = 1;
                clone_preserving_field_list(CloneType.E2E,
                    PFC_SESSION_BASE + (bit<32>) meta.ingress_port, FL_CLONE);
            }
        }
    }
}

#endif
