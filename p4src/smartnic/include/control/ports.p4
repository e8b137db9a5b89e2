/* ports.p4 — what each port is: a VM's port (its VPC, and whether it is pinned to
 * software forwarding) or the uplink; and each VPC's mode. A frame from an unknown port,
 * a frame on the uplink that is not VXLAN to this NIC's VTEP, and a VNI this NIC does not
 * serve are dropped and counted (SmartNicIngress.events).
 *
 *   SmartNicIngress.ports.ports   key meta.in_port (exact)
 *     vm_port(vni: bit<24>, software: bit<1>) | uplink()        default: unknown (drop)
 *   SmartNicIngress.ports.vpcs    key meta.vni (exact)
 *     vpc(software: bit<1>)                                      default: unknown (drop)
 */
#ifndef SMARTNIC_PORTS_P4
#define SMARTNIC_PORTS_P4

control Ports(inout headers_t hdr, inout smartnic_metadata_t meta,
              inout standard_metadata_t standard_metadata, out bit<32> drop_event) {
    action vm_port(bit<24> vni, bit<1> software) {
        meta.port_kind = 1;
        meta.vni = vni;
        meta.software = software;
    }

    action uplink() {
        meta.port_kind = 2;
    }

    action unknown() {
        meta.port_kind = 0;
    }

    table ports {
        key = { meta.in_port: exact; }
        actions = { vm_port; uplink; unknown; }
        default_action = unknown();
        size = 256;
    }

    action vpc(bit<1> software) {
        meta.software = meta.software | software;
    }

    action unknown_vpc() {
        drop_event = EV_UNKNOWN_VNI;
    }

    table vpcs {
        key = { meta.vni: exact; }
        actions = { vpc; unknown_vpc; }
        default_action = unknown_vpc();
        size = 4096;
    }

    apply {
        drop_event = 0;
        ports.apply();
        if (meta.port_kind == 0) {
            drop_event = EV_UNKNOWN_PORT;
        } else if (meta.port_kind == 2) {
            /* the underlay: VXLAN to this NIC's VTEP, else dropped */
            if (hdr.vxlan.isValid() && hdr.u_ipv4.dst_addr == meta.my_vtep
                    && (hdr.vxlan.flags & VXLAN_FLAGS_VNI) != 0) {
                meta.vni = hdr.vxlan.vni;
            } else {
                drop_event = EV_NOT_VXLAN;
            }
        }
        if (drop_event == 0) {
            vpcs.apply();
        }
    }
}

#endif
