"""Replay a node under pressure: a scenario file, the eviction manager on a virtual clock, and a timeline.

Upstream: pkg/kubelet/eviction/eviction_manager.go managerImpl.Start (the loop replay.py replays) and
pkg/kubelet/kubelet.go (evictionMonitoringPeriod = 10 s). The Summary each pass reads is built from the
scenario, in the shape of k8s.io/kubelet/pkg/apis/stats/v1alpha1/types.go.

A scenario is a YAML file (all times are Go durations such as 90s, 2m, 1h30m; sizes and counts are
Kubernetes quantities such as 512Mi, 4Gi, 1Mi, 4194304):

    description: one paragraph: what happens on this node and why it matters
    duration: 10m                     # how long to replay (default 10m)
    node:
      name: worker-1
      capacity:
        memory: 4Gi                   # the machine's memory (the root cgroup's limit)
        cpu: "4"                      # informational
        nodefs: 100Gi                 # the filesystem of /var/lib/kubelet (logs, emptyDir volumes)
        inodes: 6553600               # nodefs inodes
        imagefs: 200Gi                # optional: a dedicated image filesystem (images, writable layers)
        imagefsInodes: 13107200       # its inodes; without imagefs, images live on nodefs
        maxpid: 4194304               # /proc/sys/kernel/pid_max
      usage:                          # what the OS and system daemons use (not pods); each a series
        memory: 600Mi
        nodefs: 10Gi                  # also imagefs, inodes, imagefsInodes, pids
      kubelet:                        # KubeletConfiguration fields: a flag string or a mapping
        evictionHard: memory.available<500Mi,nodefs.available<10%   # omitted: the v1.27 Linux default
        evictionSoft: memory.available<1Gi                         # omitted: none
        evictionSoftGracePeriod: memory.available=1m30s            # key=value, like the flag
        evictionMinimumReclaim: memory.available=200Mi
        evictionPressureTransitionPeriod: 5m                       # default 5m
        evictionMaxPodGracePeriod: 0                               # default 0
        enforceNodeAllocatable: [pods]                             # default [pods]
        systemReserved: memory=500Mi  # optional, with kubeReserved: they size the "pods" cgroup
    images:                           # what image GC may delete to relieve disk pressure
      - {name: "registry.example/batch:v1", size: 3Gi, lastUsed: -2h}  # lastUsed omitted: never used
                                      # also inodes, pinned, detected (default: found at kubelet start)
    pods:                             # running when the replay starts, in this order
      - file: ../pods/web.yaml        # one Pod, relative to this file; or `manifest:` inline
        usage:                        # the first container's usage (or containers: {NAME: {...}})
          memory: {0s: 200Mi, 2m: 900Mi}   # steps: 200Mi from 0s, 900Mi from 2m
          rootfs: {ramp: {0s: 0, 10m: 5Gi}}  # a ramp: a straight line between points
          logs: 50Mi                  # a constant; also inodes (on the writable layer)
          pids: 40                    # pod-level: pids, and volumes: {VOLUME: series}
    events:
      - {at: 3m, addPod: {file: ../pods/burstable.yaml}}   # an admission attempt (then it runs)
      - {at: 4m, pullImage: {name: "registry.example/app:v2", size: 1Gi}}
      - {at: 5m, set: {pod: web, memory: 300Mi}}           # a step change (pod or node usage)
      - {at: 6m, set: {node: {memory: 2Gi}}}
    expect:                           # optional: the outcome, checked by tests and `mini-kubelet run`
      evictions: [{pod: web, at: 2m30s, signal: memory.available}]   # [] = no eviction
      conditions: [{type: MemoryPressure, from: 2m20s, to: 7m40s}]   # `to` omitted: still reported
      rejected: [{pod: burstable, at: 3m}]                           # also `admitted: [names]`
      reclaimed: [{at: 1m, bytes: 3Gi}]                              # node-level GC that ran

A series is a constant, a mapping {time: value} of steps (0 before the first time), or {ramp: {...}}.
Usage times of a pod count from when it starts. A `set` replaces a series by a constant from then on.

How the replay maps to the kubelet:

- One synchronize pass every 10 s from 0s. After a pass that evicts, the next pass comes when the pod
  is gone: killPodNow blocks up to max(10, 1.5 x override) s, then waitForPodsCleanup polls every 1 s
  for up to 30 s, and the loop passes again at once (upstream managerImpl.Start).
- An evicted pod uses its resources until its effective grace period ends (the worst case: a process
  that ignores SIGTERM), then stops. `eviction.records.effective_grace_period` gives that period in v1.27.
- Stats are fresh at each pass (the manager asks for updateStats=true). The node's memory working set is
  the OS usage plus every running pod's; the "pods" cgroup's limit is capacity - systemReserved -
  kubeReserved when enforceNodeAllocatable has "pods". Container writable layers (rootfs) and images
  are on imagefs if it is dedicated, else on nodefs; logs and emptyDir/configMap/gitRepo volumes are on
  nodefs; a memory-backed emptyDir counts in the pod's memory working set.
- Without a dedicated imagefs, imagefs is the same filesystem as nodefs: the Summary reports it with
  nodefs's capacity and availability (so imagefs.available<15% fires before nodefs.available<10%).
- Images present at the start count as found at kubelet start (old enough to delete); a pulled image is
  detected when pulled, so image GC keeps it for imageMinimumGCAge (2m). Images of running pods are in use.
  Periodic image GC (every 5m, above 85%) and periodic container GC are not replayed.
- Only the eviction manager's admit handler runs on an added pod; a rejected pod never runs.
- Active pods are listed in the order they started; upstream's order is a map's, so exact ties in the
  ranking may come out differently on a real node.
- A pod without metadata.uid gets its name as UID (as upstream's tests do); spec.priority unset is
  resolved from priorityClassName system-node-critical / system-cluster-critical like the API server
  does; terminationGracePeriodSeconds unset is 30; requests missing from limits are defaulted.

The package, in the order a scenario goes through it:

- series.py: Go durations, and Series (a value over time: steps or a ramp);
- reader.py, settings.py, scenario.py: load_scenario reads and checks the file into a Scenario;
- summary.py: the running pods and the Summary built from them at each pass (build_summary);
- timeline.py: what the replay reports (Timeline, Step, Eviction), the ranking keys and why a pod went first;
- replay.py: run_scenario, the loop; expect.py: check_expect; plot.py: plot_timeline.
"""

from __future__ import annotations

from ..eviction import signals
from .expect import check_expect
from .plot import plot_timeline
from .replay import (EVICTION_MONITORING_PERIOD, KILL_POD_MIN_TIMEOUT, POD_CLEANUP_POLL_FREQ, POD_CLEANUP_TIMEOUT,
                     ZERO_TIME, run_scenario)
from .scenario import DEFAULT_DURATION, PRIORITY_CLASSES, Event, PodPlan, Scenario, load_scenario
from .series import PAGE_SIZE, Series, format_duration, parse_duration
from .summary import RunningPod, build_summary, scenario_time
from .timeline import (Admission, Eviction, Happening, RankedPod, Step, Timeline, decided_by, format_bytes,
                       format_signed_bytes, pod_label, rank_rows, threshold_text, value_text)

__all__ = [
    "signals", "check_expect", "plot_timeline", "run_scenario", "load_scenario", "build_summary",
    "EVICTION_MONITORING_PERIOD", "KILL_POD_MIN_TIMEOUT", "POD_CLEANUP_POLL_FREQ", "POD_CLEANUP_TIMEOUT", "ZERO_TIME",
    "DEFAULT_DURATION", "PRIORITY_CLASSES", "PAGE_SIZE", "Event", "PodPlan", "Scenario", "Series", "RunningPod",
    "Admission", "Eviction", "Happening", "RankedPod", "Step", "Timeline", "format_duration", "parse_duration",
    "scenario_time", "decided_by", "rank_rows", "format_bytes", "format_signed_bytes", "pod_label", "threshold_text",
    "value_text",
]
