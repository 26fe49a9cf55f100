"""Replay a scenario on a virtual clock: a Pod's lifecycle (chapter 1) or a node under pressure (chapter 4).

Both kinds are one YAML format, told apart by its first field: `replay: lifecycle` for a lifecycle
scenario; `replay: eviction`, or no `replay:` at all, for a node under pressure. The fields shared by both
are `replay`, `description`, `duration`, `node`, `pods` (each from `file:` or an inline `manifest:`),
`events` (each `{at: TIME, KIND: {...}}`, one kind per event) and `expect`. Each kind has its own event
kinds and expect keys, and a field or event of the other kind is an error naming the file and the field.
A third kind, `replay: node` (chapter 5: one Kubelet with every chapter wired in), is read by
mini_kubelet/sim/node/scenario.py and described on docs/chapter-5/one-kubelet.md. Every field of the three,
with its type, default and unit, is in fields.py: the readers check a file against it, and the reference
page docs/reference/scenarios.md is made from it.

A lifecycle scenario (times are Go durations; the replay steps one second at a time):

    replay: lifecycle
    description: one paragraph: what happens to these Pods and why it matters
    duration: 2m                      # how long to replay (default 2m, at most 6h)
    node: {name: node-1}              # optional: a name, and/or file:/manifest: a Node (default: 4 CPUs, 16Gi)
    pods:
      - file: ../pods/lifecycle-web.yaml   # one Pod (or workload: its template), relative to this file; or `manifest:`
        source: api                   # api (default): bound by the scheduler, from the API server;
                                      # file: a static Pod from the kubelet's manifest folder
        at: 0s                        # when its source first delivers it (default 0s)
        run:                          # optional: how each instance of a container ends by itself
          app: {after: 5s, exitCode: 1}        # every instance exits with code 1, 5 s after it starts
          init-db: {after: 3s, exitCode: 0}    # an init container that succeeds after 3 s
          worker: {after: 1m, oomKill: true}   # the OOM killer ends it (exit 137, OOMKilled)
          web: {preStopDuration: 60s}          # replay-only: how long the lifecycle.preStop hook of the
                                               # manifest runs when the container is stopped (default 0s;
                                               # the container must have one); with or without after:
    events:
      - {at: 30s, exit: {pod: web, container: app, code: 0}}     # the process ends (Completed for 0, else Error)
      - {at: 30s, crash: {pod: web, container: app, code: 2}}    # a non-zero exit (code defaults to 1)
      - {at: 30s, oomKill: {pod: web, container: app}}           # exit 137, OOMKilled
      - {at: 30s, probe: {pod: web, container: app, liveness: failure, output: "HTTP probe failed with statuscode: 500"}}
                                      # also readiness: or startup:, failure or success (the result after
                                      # failureThreshold/successThreshold probes; the prober is not replayed)
      - {at: 30s, delete: {pod: web, gracePeriod: 30}}           # kubectl delete pod (--grace-period); for a
                                      # static Pod, this deletes its mirror Pod in the API
      - {at: 30s, sandboxDies: {pod: web}}                       # the pod sandbox is no longer ready
    expect:                           # optional: the outcome, checked by tests and `mini-kubelet run`
      pods: [{pod: web, at: 10s, phase: Running, status: Running, ready: 1/1, restarts: 0}]  # kubectl get pods
      restarts: [{pod: web, container: app, at: 6s, count: 1, backOff: null, exitCode: 1, reason: Error}]
                                      # every restart, in order; backOff: the CrashLoopBackOff delay waited
      events: [{pod: web, reason: BackOff, type: Warning}]       # seen in this order (others may come between)
      kills: [{pod: web, at: 20s, gracePeriod: 30}]              # every killPod, in order; null: no override
      stops: [{pod: web, container: app, at: 20s, preStop: 30s, gracePeriod: 30s, sigterm: 50s, sigkillBy: 1m20s}]
                                      # every container stop the report lists (a preStop hook ran, or the grace
                                      # period is not its killPod's), in order; preStop: the seconds waited for it

`container` defaults to the Pod's first container; `pod` is metadata.name (a static Pod may also be named by
its manifest's name, without the -NODE suffix). Containers without `run:` run until something happens to them.

How the lifecycle replay maps to the kubelet (mini_kubelet.kubelet_main.Kubelet wires the real modules):

- The API source and the file source send their full lists (SETs) to PodConfig; the sync loop, pod workers,
  the runtime manager's SyncPod with the crash-loop back-off, the PLEG (relist every 1 s) and the status
  manager run as in chapter 1. An API Pod arrives bound to the node with status Pending, a UID (its name if
  none), and terminationGracePeriodSeconds 30 if unset.
- Each second: Pods due arrive, containers end as `run:` says, the events happen, the kubelet takes one
  pass; what the status manager writes is stored in the API server (whose watch the kubelet then sees in the
  same second), and a deleted Pod whose worker has finished is removed from it.
- Containers stop at once on SIGTERM (exit 143): the grace period the kubelet gives is reported, not waited.
  A preStop hook is run on paper: the report gives the seconds the kubelet waits for it, StopContainer's
  grace period, and when a node would send SIGTERM and at the latest SIGKILL.
  Images are present, volumes mount, the network is ready, and no cgroups are made.
- The timeline's lines are what `kubectl get pods -w` (READY, STATUS and RESTARTS as kubectl prints them),
  `kubectl describe pod` (events) and `kubectl get pod -o yaml` (the final status) would show.

A node-under-pressure scenario replays the eviction manager:

Upstream: pkg/kubelet/eviction/eviction_manager.go managerImpl.Start (the loop eviction/replay.py replays) and
pkg/kubelet/kubelet.go (evictionMonitoringPeriod = 10 s). The Summary each pass reads is built from the
scenario, in the shape of k8s.io/kubelet/pkg/apis/stats/v1alpha1/types.go.

A node-under-pressure scenario is a YAML file (all times are Go durations such as 90s, 2m, 1h30m; sizes
and counts are Kubernetes quantities such as 512Mi, 4Gi, 1Mi, 4194304):

    replay: eviction                  # optional: the default
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
        evictionHard: memory.available<500Mi,nodefs.available<10%   # omitted: the release's Linux default
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
      - file: ../pods/web.yaml        # one Pod (or workload: its template), relative to this file; or `manifest:`
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
  that ignores SIGTERM), then stops. `eviction.records.effective_grace_period` gives that period (v1.27: 30 s
  for a hard eviction; from 1.31, 1 s).
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
  does (with a note on stderr; not for a static pod, which no API server sees); terminationGracePeriodSeconds
  unset is 30; requests missing from limits are defaulted.

The package: what the three kinds share at the top, then one subpackage a kind, each in the order a scenario
goes through it:

- series.py: Go durations, and Series (a value over time: steps or a ramp); reader.py: each field read and
  checked; settings.py: the kubelet settings; fields.py: every format's fields;
- eviction/: scenario.py (load_scenario reads and checks the file into a Scenario), summary.py (the running
  pods and the Summary built from them at each pass: build_summary), timeline.py (what the replay reports:
  Timeline, Step, Eviction, the ranking keys and why a pod went first), replay.py (run_scenario, the loop),
  expect.py (check_expect), plot.py (plot_timeline);
- lifecycle/: scenario.py (load_lifecycle_scenario), replay.py (run_lifecycle), api.py (the API server's
  side), timeline.py (what is reported, and kubectl's columns), expect.py (check_lifecycle_expect), plot.py
  (plot_lifecycle);
- node/: scenario.py (load_node_scenario), replay.py (run_node) with cluster.py, usage.py and events.py,
  trace.py (what is reported, check_node_expect), plot.py (plot_node).
"""

from __future__ import annotations


from ..eviction import signals
from ..lazy import lazy_getattr
from .series import PAGE_SIZE, Series, format_duration, parse_duration

# The other names, each loaded from its module when first asked for (PEP 562 __getattr__): reading a scenario's
# fields (reader.py, fields.py) loads no replay, and so not the Kubernetes client.
_NAMES = {
    "eviction.expect": "check_expect", "eviction.plot": "plot_timeline",
    "eviction.replay": "EVICTION_MONITORING_PERIOD KILL_POD_MIN_TIMEOUT POD_CLEANUP_POLL_FREQ POD_CLEANUP_TIMEOUT ZERO_TIME "
              "run_scenario",
    "eviction.scenario": "DEFAULT_DURATION PRIORITY_CLASSES Event PodPlan Scenario load_scenario",
    "eviction.summary": "RunningPod build_summary scenario_time",
    "eviction.timeline": "Admission Eviction Happening RankedPod Step Timeline decided_by format_bytes format_signed_bytes "
                "pod_label rank_rows threshold_text value_text",
}
__getattr__ = lazy_getattr(__name__, globals(), _NAMES)


__all__ = [
    "signals", "check_expect", "plot_timeline", "run_scenario", "load_scenario", "build_summary",
    "EVICTION_MONITORING_PERIOD", "KILL_POD_MIN_TIMEOUT", "POD_CLEANUP_POLL_FREQ", "POD_CLEANUP_TIMEOUT", "ZERO_TIME",
    "DEFAULT_DURATION", "PRIORITY_CLASSES", "PAGE_SIZE", "Event", "PodPlan", "Scenario", "Series", "RunningPod",
    "Admission", "Eviction", "Happening", "RankedPod", "Step", "Timeline", "format_duration", "parse_duration",
    "scenario_time", "decided_by", "rank_rows", "format_bytes", "format_signed_bytes", "pod_label", "threshold_text",
    "value_text",
]
