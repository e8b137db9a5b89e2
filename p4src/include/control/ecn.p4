/* ecn.p4 — ECN marking on egress queue depth (instance FabricEgress.ecn).
 *
 * FabricEgress.ecn.thresholds per egress port:
 *   set_ecn_threshold(kmin_pkts): mark when enq_qdepth >= kmin_pkts (step marking);
 *   set_ecn_red(kmin_pkts, kmax_pkts, pmax_per_255): DCQCN/RED-like — mark when
 *     enq_qdepth >= kmax_pkts; for kmin_pkts <= q < kmax_pkts mark when
 *     r * (kmax - kmin) < pmax_per_255 * (q - kmin) with r = random(0..254), i.e. with
 *     probability ceil(pmax * (q - kmin) / (kmax - kmin)) / 255 (no division on target).
 *   set_ecn_dynamic(): kmin and kmax in cells follow the free shared buffer (buffer.p4):
 *     alpha * free with the alphas of FabricEgress.ecn.alpha[meta.priority]
 *     (set_ecn_alpha(kmin_alpha_code, kmax_alpha_code, pmax_per_255), alpha =
 *     2^(code - 6)); q = the packet's egress queue in cells with itself in it, free = the
 *     free pool with it; RED between as above. No alpha for the priority, or no
 *     FabricIngress.buffer.config: no marking.
 * Only ECT(0) and ECT(1) packets become CE (3); Not-ECT and CE are left alone. Each
 * mark counts in FabricEgress.ecn.marks[egress_port]. No entry = no marking.
 */
#ifndef FABRIC_ECN_P4
#define FABRIC_ECN_P4

control Ecn(inout headers_t hdr, inout fabric_metadata_t meta,
            inout standard_metadata_t standard_metadata) {
    counter(PORT_CELLS, CounterType.packets) marks;

    bit<1>  red = 0;
    bit<32> kmin = 0;
    bit<32> kmax = 0;
    bit<32> pmax = 0;

    action set_ecn_threshold(bit<19> kmin_pkts) {
        red = 0;
        kmin = (bit<32>) kmin_pkts;
    }

    action set_ecn_red(bit<19> kmin_pkts, bit<19> kmax_pkts, bit<8> pmax_per_255) {
        red = 1;
        kmin = (bit<32>) kmin_pkts;
        kmax = (bit<32>) kmax_pkts;
        pmax = (bit<32>) pmax_per_255;
    }

    /* Dynamic mode (buffer.p4): kmin and kmax follow the free shared buffer, with the
     * alphas of the packet's priority (table alpha). */
    bit<1> dynamic = 0;
    action set_ecn_dynamic() {
        dynamic = 1;
    }

    table thresholds {
        key = { standard_metadata.egress_port: exact; }
        actions = { set_ecn_threshold; set_ecn_red; set_ecn_dynamic; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    /* kmin = 2^(kmin_alpha_code - 6) * free, kmax = 2^(kmax_alpha_code - 6) * free
     * (cells); RED between them as set_ecn_red. */
    bit<4> kmin_code = 0;
    bit<4> kmax_code = 0;
    bit<1> has_alpha = 0;
    action set_ecn_alpha(bit<4> kmin_alpha_code, bit<4> kmax_alpha_code, bit<8> pmax_per_255) {
        has_alpha = 1;
        kmin_code = kmin_alpha_code;
        kmax_code = kmax_alpha_code;
        pmax = (bit<32>) pmax_per_255;
    }

    table alpha {
        key = { meta.priority: exact; }
        actions = { set_ecn_alpha; NoAction; }
        default_action = NoAction();   /* no alpha: the priority is never marked */
        size = 8;
    }

    apply {
        if (standard_metadata.instance_type == INSTANCE_NORMAL && hdr.ipv4.isValid()
                && (hdr.ipv4.ecn == ECN_ECT0 || hdr.ipv4.ecn == ECN_ECT1)) {
            if (thresholds.apply().hit) {
                bit<32> q = (bit<32>) standard_metadata.enq_qdepth;
                bool mark = false;
                if (dynamic == 1) {
                    if (meta.buf_counted == 1) {
                        alpha.apply();
                    }
                    if (has_alpha == 1) {
                        bit<64> dq = (bit<64>) meta.buf_queue_cells;
                        bit<64> dmin = (((bit<64>) meta.buf_free) << kmin_code) >> 6;
                        bit<64> dmax = (((bit<64>) meta.buf_free) << kmax_code) >> 6;
                        if (dq >= dmax) {
                            mark = true;
                        } else if (dq >= dmin) {
                            bit<32> r;
                            random(r, 0, 254);
                            mark = ((bit<64>) r) * (dmax - dmin) < ((bit<64>) pmax) * (dq - dmin);
                        }
                    }
                } else if (red == 0) {
                    mark = q >= kmin;
                } else if (q >= kmax) {
                    mark = true;
                } else if (q >= kmin) {
                    bit<32> r;
                    random(r, 0, 254);
                    mark = r * (kmax - kmin) < pmax * (q - kmin);
                }
                if (mark) {
                    hdr.ipv4.ecn = ECN_CE;
                    meta.ecn_marked = 1;
                    marks.count((bit<32>) standard_metadata.egress_port);
                }
            }
        }
    }
}

#endif
