"""The container manager: pod, QoS-tier and node-allocatable cgroups.

Upstream: pkg/kubelet/cm/
"""

from .helpers import (
    MAX_SHARES,
    MILLI_CPU_TO_CPU,
    MIN_QUOTA_PERIOD,
    MIN_SHARES,
    QUOTA_PERIOD,
    SHARES_PER_CPU,
    ResourceConfig,
    huge_page_limits,
    milli_cpu_to_quota,
    milli_cpu_to_shares,
    resource_config_for_pod,
)
from .cgroups import (
    HOST_PAGE_SIZES,
    KUBEPODS,
    ROOT_CGROUP_NAME,
    CgroupName,
    cgroup_files,
    cgroup_name_to_path,
    cpu_shares_to_cpu_weight,
    cpu_weight_to_cpu_shares,
    expand_slice,
    huge_page_unit_size_from_byte_size,
    is_pod_cgroup,
    new_cgroup_name,
    page_size_in_bytes,
    parse_cgroupfs_to_cgroup_name,
    parse_systemd_to_cgroup_name,
    pod_cgroup_name,
    qos_cgroup_names,
    to_cgroupfs,
    to_systemd,
)
# The function node_allocatable is not re-exported: it would hide the module of the same name
# (mini_kubelet.cm.node_allocatable). Import it from the module.
from .node_allocatable import (
    get_cgroup_config,
    get_node_allocatable_absolute,
    get_node_allocatable_reservation,
    hard_eviction_reservation,
    node_allocatable_cgroup_config,
    parse_percentage,
    validate_node_allocatable,
)
from .qos_tiers import UNBOUNDED_HUGE_PAGE_LIMIT, burstable_cpu_request, huge_pages_unbounded, qos_tier_configs
from .tree import Cgroup, cgroup_tree, node_capacity
