"""The eviction manager's building blocks: signals and thresholds, observations, ranking, messages.

Upstream: pkg/kubelet/eviction/ (api/types.go, helpers.go, types.go).

The names are the submodules' own, each loaded when first asked for (PEP 562 __getattr__): a command that reads
only a threshold flag imports the thresholds alone, not the ranking and its Kubernetes client.
"""


from ..lazy import lazy_getattr

_NAMES = {  # submodule: the names it gives the package
    "api": "ALLOCATABLE_MEMORY_AVAILABLE DEFAULT_EVICTION_HARD SIGNAL_CONTAINERFS_AVAILABLE SIGNAL_CONTAINERFS_INODES_FREE "
           "default_eviction_hard IMAGEFS_AVAILABLE IMAGEFS_INODES_FREE MEMORY_AVAILABLE NODEFS_AVAILABLE "
           "NODEFS_INODES_FREE OP_LESS_THAN PID_AVAILABLE SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE SIGNAL_IMAGEFS_AVAILABLE "
           "SIGNAL_IMAGEFS_INODES_FREE SIGNAL_MEMORY_AVAILABLE SIGNAL_NODEFS_AVAILABLE SIGNAL_NODEFS_INODES_FREE "
           "SIGNAL_PID_AVAILABLE Threshold ThresholdValue format_quantity get_threshold_quantity",
    "messages": "REASON eviction_message get_threshold_met_info pod_is_evicted",
    "ranking": "FS_STATS_LOCAL_VOLUME_SOURCE FS_STATS_LOGS FS_STATS_ROOT build_signal_to_rank_func "
               "get_resource_request_quantity local_volume_names pod_disk_usage rank_disk_pressure_func "
               "rank_memory_pressure rank_pid_pressure",
    "signals": "DISK_PRESSURE MEMORY_PRESSURE PID_PRESSURE SIGNAL_TO_NODE_CONDITION SIGNAL_TO_RESOURCE SignalObservation "
               "compare_threshold_value get_reclaimable_threshold has_node_condition has_threshold "
               "is_allocatable_eviction_threshold is_hard_eviction_threshold make_signal_observations merge_thresholds "
               "node_conditions node_conditions_last_observed_at node_conditions_observed_since "
               "sort_by_eviction_priority thresholds_first_observed_at thresholds_met thresholds_met_grace_period "
               "thresholds_updated_stats valid_signal",
    "thresholds": "add_allocatable_thresholds parse_eviction_flag parse_map_string_string parse_percentage "
                  "parse_threshold_config",
}
__getattr__ = lazy_getattr(__name__, globals(), _NAMES)
