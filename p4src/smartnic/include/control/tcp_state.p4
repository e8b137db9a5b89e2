/* tcp_state.p4 — a session's TCP state, kept by the data plane and reported on every
 * change (digest tcp_event_t, receiver 1).
 *
 * The state lives in register ``states`` at the session's slot: bits 3..0 the state,
 * bit 4 the direction of the first FIN, bits 15..8 the slot's generation. A cell whose
 * generation is not the session's belongs to an earlier session of that slot and reads as
 * TCP_NONE: the manager never writes the register (BMv2's P4Runtime cannot), a new
 * session starts clean by its generation alone.
 *
 *   NONE --SYN--> SYN --SYN+ACK--> SYNACK --ACK--> EST --FIN--> FIN1 --FIN other way--> CLOSED
 *   NONE --ACK--> EST (a connection picked up mid-stream); NONE --SYN+ACK--> SYNACK;
 *   any --RST--> CLOSED; CLOSED --SYN--> SYN (the 5-tuple reused); NONE/SYN/SYNACK/EST --FIN--> FIN1
 *
 * The bit-exact model is p4src/smartnic/model.py (tcp_next).
 */
#ifndef SMARTNIC_TCP_STATE_P4
#define SMARTNIC_TCP_STATE_P4

control TcpState(inout headers_t hdr, inout smartnic_metadata_t meta, out bool reported) {
    register<bit<16>>(SESSION_TABLE_SIZE) states;

    apply {
        bit<16> cell;
        states.read(cell, meta.slot);
        bit<4> state = cell[3:0];
        bit<1> fin_dir = cell[4:4];
        if (cell[15:8] != meta.gen) {
            state = TCP_NONE;
            fin_dir = 0;
        }
        bit<4> next = state;
        bit<1> next_fin_dir = fin_dir;
        bit<8> f = hdr.tcp.flags;
        if ((f & 0x04) != 0) {                          /* RST */
            next = TCP_CLOSED;
        } else if ((f & 0x12) == 0x02) {                /* SYN */
            if (state == TCP_NONE || state == TCP_CLOSED) {
                next = TCP_SYN;
                next_fin_dir = 0;
            }
        } else if ((f & 0x12) == 0x12) {                /* SYN+ACK */
            if (state == TCP_NONE || state == TCP_SYN) {
                next = TCP_SYNACK;
            }
        } else if ((f & 0x01) != 0) {                   /* FIN */
            if (state == TCP_FIN1) {
                if (meta.dir != fin_dir) {
                    next = TCP_CLOSED;
                }
            } else if (state != TCP_CLOSED) {
                next = TCP_FIN1;
                next_fin_dir = meta.dir;
            }
        } else if ((f & 0x10) != 0) {                   /* ACK */
            if (state == TCP_NONE || state == TCP_SYNACK) {
                next = TCP_EST;
            }
        }
        reported = false;
        if (next != state || cell[15:8] != meta.gen) {
            states.write(meta.slot, meta.gen ++ 3w0 ++ next_fin_dir ++ next);
        }
        if (next != state) {
            digest<tcp_event_t>(1, {
                meta.vni,
                meta.key_proto,
                meta.key_ip_lo,
                meta.key_ip_hi,
                meta.key_port_lo,
                meta.key_port_hi,
                meta.slot,
                (bit<8>)state,
                (bit<8>)next
            });
            reported = true;
        }
    }
}

#endif
