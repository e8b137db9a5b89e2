/* switch_info.p4 — identity and role of this switch, set by the control plane.
 *
 * FabricIngress.switch_info.config is keyless: the controller modifies its default
 * action, e.g. set_switch(switch_id=11, role=0 (leaf), ecmp_seed=0x5eed0011).
 */
#ifndef FABRIC_SWITCH_INFO_P4
#define FABRIC_SWITCH_INFO_P4

control SwitchInfo(inout fabric_metadata_t meta) {
    action set_switch(bit<32> switch_id, bit<8> role, bit<32> ecmp_seed) {
        meta.switch_id = switch_id;
        meta.role = role;
        meta.ecmp_seed = ecmp_seed;
    }

    table config {
        actions = { set_switch; }
        default_action = set_switch(0, 0, 0);
        size = 1;
    }

    apply {
        config.apply();
    }
}

#endif
