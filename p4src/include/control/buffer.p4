/* buffer.p4 — a shared buffer kept by the program, for dynamic PFC and ECN thresholds.
 *
 * A switch ASIC holds its queues in one shared buffer and lets a queue grow while it is
 * below alpha * (free buffer) — the dynamic-threshold rule of Choudhury & Hahne (IEEE/ACM
 * ToN 6(2), 1998); SAI names it SHARED_DYNAMIC_TH, "2^n of the available buffer of the
 * pool". BMv2 and p4sim have no shared buffer, so the program keeps the count:
 *
 *   FabricIngress.buffer.config (keyless): set_shared_buffer(size_cells, cell_bytes_log2)
 *     — the pool holds size_cells cells of 2^cell_bytes_log2 bytes. Default NoAction: no
 *     accounting, and the dynamic modes of pfc.p4 and ecn.p4 do nothing.
 *   Ingress (FabricIngress.buffer): a forwarded IPv4 packet takes
 *     cells = ceil(packet_length / 2^cell_bytes_log2) in three registers: used[0] (the
 *     pool), ingress_cells[ingress_port * 8 + priority] (its ingress priority group, what
 *     PFC watches) and egress_cells[egress_port * 8 + priority] (its egress queue, what
 *     ECN watches); meta.buf_free = size - used after it (0 if negative).
 *   Egress (FabricEgress.buffer), the same packet leaving: meta.buf_queue_cells = its
 *     queue with itself still in it, meta.buf_free = the free pool with itself still in
 *     it (ECN decides on these), then the three counts fall by its cells (not below 0),
 *     meta.buf_free and meta.buf_ing_cells are recomputed after (PFC XON decides on these).
 *
 * A threshold is alpha * free with alpha = 2^(code - 6), code 0..15 (the control plane
 * allows 0..9: 1/64 .. 8), computed without division as ((bit<64>) free << code) >> 6.
 * p4src/buffermodel.py is the bit-exact model.
 *
 * The registers are shared by ingress and egress, so they are declared at the top level
 * with the names FabricIngress.buffer.*. Clones, recirculated copies, PFC frames,
 * packet_out and dropped packets are not counted.
 */
#ifndef FABRIC_BUFFER_P4
#define FABRIC_BUFFER_P4

@name(".FabricIngress.buffer.used")
register<bit<32>>(1) buffer_used;
@name(".FabricIngress.buffer.ingress_cells")
register<bit<32>>(PFC_CELLS) buffer_ingress_cells;
@name(".FabricIngress.buffer.egress_cells")
register<bit<32>>(PFC_CELLS) buffer_egress_cells;

control SharedBufferIngress(inout headers_t hdr, inout fabric_metadata_t meta,
                            inout standard_metadata_t standard_metadata) {
    bit<8> cell_log2 = 0;

    action set_shared_buffer(bit<32> size_cells, bit<8> cell_bytes_log2) {
        meta.buf_on = 1;
        meta.buf_size = size_cells;
        cell_log2 = cell_bytes_log2;
    }

    table config {
        actions = { set_shared_buffer; NoAction; }
        default_action = NoAction();
        size = 1;
    }

    apply {
        if (meta.dropped == 0 && meta.bypass == 0 && hdr.ipv4.isValid()) {
            config.apply();
            if (meta.buf_on == 1) {
                bit<32> round_up = (((bit<32>) 1) << cell_log2) - 1;
                bit<32> cells = (standard_metadata.packet_length + round_up) >> cell_log2;
                bit<32> ing_index = (((bit<32>) standard_metadata.ingress_port) << 3)
                                    + (bit<32>) meta.priority;
                bit<32> eg_index = (((bit<32>) standard_metadata.egress_spec) << 3)
                                   + (bit<32>) meta.priority;
                bit<32> used;
                buffer_used.read(used, 0);
                used = used + cells;
                buffer_used.write(0, used);
                bit<32> ing;
                buffer_ingress_cells.read(ing, ing_index);
                ing = ing + cells;
                buffer_ingress_cells.write(ing_index, ing);
                bit<32> eg;
                buffer_egress_cells.read(eg, eg_index);
                eg = eg + cells;
                buffer_egress_cells.write(eg_index, eg);
                meta.buf_counted = 1;
                meta.buf_cells = cells;
                meta.buf_ing_index = ing_index;
                meta.buf_eg_index = eg_index;
                meta.buf_ing_cells = ing;
                meta.buf_free = 0;
                if (meta.buf_size > used) {
                    meta.buf_free = meta.buf_size - used;
                }
            }
        }
    }
}

control SharedBufferEgress(inout headers_t hdr, inout fabric_metadata_t meta,
                           inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.instance_type == INSTANCE_NORMAL && meta.buf_counted == 1) {
            bit<32> used;
            buffer_used.read(used, 0);
            bit<32> eg;
            buffer_egress_cells.read(eg, meta.buf_eg_index);
            bit<32> ing;
            buffer_ingress_cells.read(ing, meta.buf_ing_index);
            /* what ECN sees: the queue and the pool with this packet still in them */
            meta.buf_queue_cells = eg;
            meta.buf_free = 0;
            if (meta.buf_size > used) {
                meta.buf_free = meta.buf_size - used;
            }
            /* the packet leaves */
            used = (used > meta.buf_cells) ? used - meta.buf_cells : 0;
            eg = (eg > meta.buf_cells) ? eg - meta.buf_cells : 0;
            ing = (ing > meta.buf_cells) ? ing - meta.buf_cells : 0;
            buffer_used.write(0, used);
            buffer_egress_cells.write(meta.buf_eg_index, eg);
            buffer_ingress_cells.write(meta.buf_ing_index, ing);
            /* what PFC's XON sees */
            meta.buf_ing_cells = ing;
            meta.buf_free_after = 0;
            if (meta.buf_size > used) {
                meta.buf_free_after = meta.buf_size - used;
            }
        }
    }
}

#endif
