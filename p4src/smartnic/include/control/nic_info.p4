/* nic_info.p4 — the NIC's identity: its VTEP address and uplink MAC on the underlay, the
 * underlay next hop's MAC (the peer or the leaf), and the gateway MAC its VMs see (every
 * ARP request from a VM is answered with it).
 *
 *   SmartNicIngress.nic_info.config (keyless)
 *     set_nic(vtep_ip: bit<32>, uplink_mac: bit<48>, underlay_gw_mac: bit<48>,
 *             vm_gw_mac: bit<48>)  default set_nic(0, 0, 0, 0); the manager MODIFYs it.
 */
#ifndef SMARTNIC_NIC_INFO_P4
#define SMARTNIC_NIC_INFO_P4

control NicInfo(inout smartnic_metadata_t meta) {
    action set_nic(bit<32> vtep_ip, bit<48> uplink_mac, bit<48> underlay_gw_mac,
                   bit<48> vm_gw_mac) {
        meta.my_vtep = vtep_ip;
        meta.uplink_mac = uplink_mac;
        meta.underlay_gw_mac = underlay_gw_mac;
        meta.vm_gw_mac = vm_gw_mac;
    }

    table config {
        key = { }
        actions = { set_nic; }
        default_action = set_nic(0, 0, 0, 0);
        size = 1;
    }

    apply {
        config.apply();
    }
}

#endif
