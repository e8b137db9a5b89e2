/* sessions.p4 — the session table: one entry per connection, matching both directions.
 *
 * Key: the canonical key of session_key.p4 (VNI, protocol, lo/hi address and port).
 * Action data (session_hit): the verdict (allow, deny, software), the policy scope and
 * the version of it the entry was built from, the slot of its TCP state (and the slot's
 * generation), the next hop towards each endpoint, a load-balancer translation, and a
 * check code over the entry: crc32 of the key and every other parameter, in this order
 * (p4src/smartnic/model.py check_code is its bit-exact model):
 *
 *   vni(24) proto(8) ip_lo(32) ip_hi(32) port_lo(16) port_hi(16) verdict(8) scope(16)
 *   version(16) slot(32) gen(8) nh_lo(16) nh_hi(16) nat_side(8) nat_ip(32) nat_port(16)
 *
 * On every hit the pipeline recomputes the check code and compares (a mismatch:
 * PUNT_CORRUPT, the packet goes to software, which rebuilds the entry), then reads its
 * scope's current version (scopes; missing or different: PUNT_STALE, the manager
 * re-evaluates the session). A miss is PUNT_MISS. No packet is dropped for any of them.
 * Entries age by P4Runtime idle timeout (support_timeout); each counts its packets and
 * bytes (direct counter ``hits``).
 *
 * The software-centric build (-DFORNAX_BASELINE) keeps the table and its action but
 * checks neither the code nor the version: its manager walks the table instead.
 *
 *   SmartNicIngress.sessions.sessions  key meta.vni, meta.key_proto, meta.key_ip_lo,
 *       meta.key_ip_hi, meta.key_port_lo, meta.key_port_hi (exact)
 *     session_hit(verdict, scope, version, slot, gen, nh_lo, nh_hi, nat_side, nat_ip,
 *                 nat_port, check)                             default: session_miss
 *   SmartNicIngress.sessions.scopes    key meta.scope (exact)   current(version: bit<16>)
 */
#ifndef SMARTNIC_SESSIONS_P4
#define SMARTNIC_SESSIONS_P4

control Sessions(inout headers_t hdr, inout smartnic_metadata_t meta, out bit<7> result) {
    direct_counter(CounterType.packets_and_bytes) hits;

    action session_hit(bit<8> verdict, bit<16> scope, bit<16> version, bit<32> slot,
                       bit<8> gen, bit<16> nh_lo, bit<16> nh_hi, bit<8> nat_side,
                       bit<32> nat_ip, bit<16> nat_port, bit<32> check) {
        hits.count();
        meta.verdict = verdict;
        meta.scope = scope;
        meta.version = version;
        meta.slot = slot;
        meta.gen = gen;
        meta.nh_lo = nh_lo;
        meta.nh_hi = nh_hi;
        meta.nat_side = nat_side;
        meta.nat_ip = nat_ip;
        meta.nat_port = nat_port;
        meta.check = check;
    }

    action session_miss() {
    }

    table sessions {
        key = {
            meta.vni: exact;
            meta.key_proto: exact;
            meta.key_ip_lo: exact;
            meta.key_ip_hi: exact;
            meta.key_port_lo: exact;
            meta.key_port_hi: exact;
        }
        actions = { session_hit; @defaultonly session_miss; }
        default_action = session_miss();
        counters = hits;
        support_timeout = true;
        size = SESSION_TABLE_SIZE;
    }

#ifndef FORNAX_BASELINE
    action current(bit<16> version) {
        meta.current_version = version;
    }

    table scopes {
        key = { meta.scope: exact; }
        actions = { current; NoAction; }
        default_action = NoAction();
        size = 65536;
    }
#endif

    apply {
        result = 0;
        if (sessions.apply().hit) {
#ifndef FORNAX_BASELINE
            hash(meta.computed_check, HashAlgorithm.crc32, 32w0,
                 { meta.vni, meta.key_proto, meta.key_ip_lo, meta.key_ip_hi,
                   meta.key_port_lo, meta.key_port_hi, meta.verdict, meta.scope,
                   meta.version, meta.slot, meta.gen, meta.nh_lo, meta.nh_hi,
                   meta.nat_side, meta.nat_ip, meta.nat_port },
                 32w0xffffffff);
            if (meta.computed_check != meta.check) {
                result = PUNT_CORRUPT;
            } else if (!scopes.apply().hit) {
                result = PUNT_STALE;
            } else if (meta.current_version != meta.version) {
                result = PUNT_STALE;
            }
#endif
        } else {
            result = PUNT_MISS;
        }
    }
}

#endif
