# %% [markdown]
# # Lab 01: from bind to Running — phases, restarts, back-off and init containers
#
# Once a Pod is bound to a node, the kubelet syncs it over and over: each sync compares the Pod's
# spec with what the container runtime reports, starts what is missing, and writes a status. In
# this lab you write the rules those syncs apply, as Kubernetes v1.27 applies them, and check
# your answers against the cases in upstream's own unit tests; the last exercise computes the
# crash-loop delays as the current release, v1.36, does.
#
# **You will be able to**
#
# 1. compute a Pod's phase from its container statuses and its restart policy;
# 2. decide whether the kubelet restarts an exited container;
# 3. compute the `CrashLoopBackOff` delays, and when they start over;
# 4. decide what one sync does for a Pod with init containers, one at a time as in v1.27;
# 5. derive the events the PLEG sends when it compares two listings of the runtime;
# 6. compute the grace period a container stop gets, with its 2-second floor;
# 7. trace a Pod through a replayed timeline and read its phases off it;
# 8. compute the delays on a v1.36 node whose kubelet caps them, and when they start over there.
#
# **How the exercises work.** Each exercise is a function for you to write, followed by a check
# cell. The check runs your function on cases whose answers come from the upstream Go code (the
# last column names the upstream test or rule) and prints a table: every case passed, or the
# first failing input with what was expected and what your function returned. Until you write
# the function, the check says "not done yet".
#
# The upstream code for this lab: `pkg/kubelet/kubelet_pods.go` (`getPhase`),
# `pkg/kubelet/container/helpers.go` (`ShouldContainerBeRestarted`),
# `k8s.io/client-go/util/flowcontrol/backoff.go` (`Backoff`) with the kubelet's constants,
# `pkg/kubelet/kuberuntime/kuberuntime_manager.go` (`computePodActions`, `doBackOff`) and
# `kuberuntime_container.go` (`findNextInitContainerToRun`, `killContainer`) and
# `pkg/kubelet/pleg/generic.go` (`generateEvents`). Chapter 1 of the course links them all.

# %%
from datetime import datetime, timedelta, timezone

from kubernetes.client import (
    V1Container, V1ContainerState, V1ContainerStateRunning, V1ContainerStateTerminated, V1ContainerStateWaiting,
    V1ContainerStatus, V1ObjectMeta, V1Pod, V1PodSpec, V1Probe,
)

from mini_kubelet import container as kc
from mini_kubelet.clock import Clock
from mini_kubelet.cri import RuntimeService
from mini_kubelet.events import Recorder
from mini_kubelet.flowcontrol import new_back_off, new_container_back_off
from mini_kubelet.kubelet_pods import get_phase
from mini_kubelet.kuberuntime.kuberuntime_manager import compute_pod_actions, sync_pod
import contextlib
import io
import json

from mini_kubelet.cmd.main import main as mini_kubelet
from mini_kubelet.labs import case, check, course_path
from mini_kubelet.pleg import CONTAINER_CHANGED, PLEG_NON_EXISTENT, convert_state, generate_events

# %% [markdown]
# ## A Pod lands, one sync at a time
#
# Before the exercises, watch the mechanism run. `RuntimeService` is the course's simulated
# container runtime (it stands where containerd stands, behind the CRI), on a virtual clock.
# `sync_pod` is the runtime manager's `SyncPod`: each call compares the spec with the runtime's
# status and acts. Here a Pod with one init container and one app container takes three syncs to
# reach its app container: one starts the init container, one finds it still running and does
# nothing, and after it exits 0 one starts the app.

# %%
clock = Clock()
runtime, recorder, back_off = RuntimeService(clock), Recorder(clock), new_container_back_off(clock)
web = V1Pod(metadata=V1ObjectMeta(uid="uid-web", name="web", namespace="default"),
            spec=V1PodSpec(restart_policy="Always", init_containers=[V1Container(name="migrate", image="app:1")],
                           containers=[V1Container(name="web", image="app:1")]))


def sync(note: str) -> None:
    """One runtime sync of `web`, and what the runtime holds afterwards."""
    status = runtime.get_pod_status("uid-web", "web", "default")
    result = sync_pod(runtime, web, status, back_off, recorder)
    actions = [f"{r.action} {r.target}" + (f" ({r.error})" if r.error else "") for r in result.sync_results]
    held = sorted(f"{c.name}:{c.state}" for c in runtime.containers.values())
    print(f"{note:32} actions={actions}\n{'':32} runtime={held}")


sync("first sync")
sync("second sync (migrate running)")
runtime.exit_container("uid-web", "migrate", 0)
sync("after migrate exited 0")

# %% [markdown]
# ## Container statuses for the exercises
#
# The phase is computed from the **API** container statuses (`V1ContainerStatus`), the ones
# `kubectl get pod -o yaml` shows. `running(name)`, `exited(name, code)`, `waiting(name)` and
# `crash_looping(name, code)` build them; `crash_looping` is a container waiting to be restarted
# after it terminated (its `lastState`). `pod(policy, containers, init)` builds a Pod with those
# app and init container names.

# %%
class LabStatus(V1ContainerStatus):
    """A V1ContainerStatus that the check tables show compactly: "A running", "B exited 1"."""

    def __repr__(self) -> str:
        if self.state.running:
            return f"{self.name} running"
        if self.state.terminated:
            return f"{self.name} exited {self.state.terminated.exit_code}"
        if self.last_state and self.last_state.terminated:
            return f"{self.name} waiting after exit {self.last_state.terminated.exit_code}"
        return f"{self.name} waiting"


def _status(name, state, last=None) -> LabStatus:
    return LabStatus(name=name, image="", image_id="", ready=False, restart_count=0, state=state, last_state=last)


def running(name: str) -> LabStatus:
    return _status(name, V1ContainerState(running=V1ContainerStateRunning()))


def exited(name: str, code: int) -> LabStatus:
    return _status(name, V1ContainerState(terminated=V1ContainerStateTerminated(exit_code=code)))


def waiting(name: str) -> LabStatus:
    return _status(name, V1ContainerState(waiting=V1ContainerStateWaiting(reason="ContainerCreating")))


def crash_looping(name: str, code: int) -> LabStatus:
    return _status(name, V1ContainerState(waiting=V1ContainerStateWaiting(reason="CrashLoopBackOff")),
                   V1ContainerState(terminated=V1ContainerStateTerminated(exit_code=code)))


class Statuses(list):
    """Container statuses, shown as [A running, B exited 1] in the check tables."""


class LabPod(V1Pod):
    """A V1Pod that the check tables show by restart policy and containers."""

    def __repr__(self) -> str:
        init = [c.name for c in self.spec.init_containers or []]
        return (f"<Pod {self.spec.restart_policy} init={init} "
                f"containers={[c.name for c in self.spec.containers]}>")


def pod(policy: str, containers=("A", "B"), init=()) -> LabPod:
    return LabPod(metadata=V1ObjectMeta(uid="uid-lab", name="lab", namespace="default"),
                  spec=V1PodSpec(restart_policy=policy, containers=[V1Container(name=n) for n in containers],
                                 init_containers=[V1Container(name=n) for n in init] or None))


print(repr(pod("Never", containers=("app",))), Statuses([running("A"), crash_looping("B", 1)]))

# %% [markdown]
# ## Exercise 1: a Pod's phase
#
# `getPhase` counts, then decides. Write `pod_phase(pod, statuses)`, where `statuses` holds the
# API statuses of the app and init containers (in any order, found by name), for a Pod that is
# not being terminated.
#
# **Count the init containers.** One is *pending* if it has no status, is running, or waits with
# no termination in `last_state`. One *failed* if it terminated with a non-zero code, or waits
# with a non-zero termination in `last_state`. One that exited 0 counts for nothing.
#
# **Count the app containers.** *unknown* (no status), *running*, *stopped* (terminated; among
# them *succeeded* if the code is 0), or *waiting*. A container that waits **with** a
# termination in `last_state` (a crash loop) counts as *stopped*, not waiting.
#
# **Decide**, first match wins:
#
# 1. a failed init container and `restartPolicy` `Never`: `"Failed"`;
# 2. a pending init container, or a waiting app container: `"Pending"`;
# 3. some running and none unknown: `"Running"`;
# 4. none running, some stopped, none unknown: `"Running"` under `Always`; else `"Succeeded"` if
#    every stopped container succeeded; else `"Failed"` under `Never`; else (`OnFailure`)
#    `"Running"`;
# 5. otherwise `"Pending"`.

# %%
def pod_phase(pod, statuses) -> str:
    """The phase getPhase computes for a Pod that is not terminating."""
    # BEGIN SOLUTION
    return get_phase(pod, list(statuses), False)
    # END SOLUTION


# %%
check("Exercise 1: a Pod's phase", pod_phase, [
    case(pod("Never", containers=("app",)), Statuses([exited("app", 1)]), expected="Failed",
         note="the chapter's question: one container, Never, exit 1"),
    case(pod("Never", containers=("app",)), Statuses([exited("app", 0)]), expected="Succeeded",
         note="the same, exit 0"),
    case(pod("OnFailure", containers=("app",)), Statuses([exited("app", 1)]), expected="Running",
         note="the same under OnFailure: it will be restarted"),
    case(pod("Always"), Statuses(), expected="Pending", note="TestPodPhaseWithRestartAlways: waiting"),
    case(pod("Always"), Statuses([running("A"), running("B")]), expected="Running",
         note="TestPodPhaseWithRestartAlways: all running"),
    case(pod("Always"), Statuses([exited("A", 0), exited("B", 0)]), expected="Running",
         note="TestPodPhaseWithRestartAlways: all stopped with restart always"),
    case(pod("Always"), Statuses([running("A")]), expected="Pending",
         note="TestPodPhaseWithRestartAlways: mixed state #2"),
    case(pod("Always"), Statuses([running("A"), waiting("B")]), expected="Pending",
         note="TestPodPhaseWithRestartAlways: mixed state #3"),
    case(pod("Always"), Statuses([running("A"), crash_looping("B", 0)]), expected="Running",
         note="TestPodPhaseWithRestartAlways: backoff crashloop container"),
    case(pod("Never"), Statuses([exited("A", 0), exited("B", 0)]), expected="Succeeded",
         note="TestPodPhaseWithRestartNever: all succeeded"),
    case(pod("Never"), Statuses([exited("A", -1), exited("B", -1)]), expected="Failed",
         note="TestPodPhaseWithRestartNever: all failed"),
    case(pod("Never"), Statuses([running("A"), exited("B", 0)]), expected="Running",
         note="TestPodPhaseWithRestartNever: mixed state #1"),
    case(pod("OnFailure"), Statuses([exited("A", -1), exited("B", -1)]), expected="Running",
         note="TestPodPhaseWithRestartOnFailure: all failed"),
    case(pod("OnFailure"), Statuses([exited("A", 0), exited("B", 0)]), expected="Succeeded",
         note="TestPodPhaseWithRestartOnFailure: all succeeded"),
    case(pod("Always", init=("X",)), Statuses([running("X")]), expected="Pending",
         note="TestPodPhaseWithRestartAlwaysInitContainers: init container running"),
    case(pod("Always", init=("X",)), Statuses([exited("X", -1)]), expected="Pending",
         note="TestPodPhaseWithRestartAlwaysInitContainers: terminated non-zero"),
    case(pod("Never", init=("X",)), Statuses([exited("X", -1)]), expected="Failed",
         note="TestPodPhaseWithRestartNeverInitContainers: terminated non-zero"),
    case(pod("Never", init=("X",)), Statuses([crash_looping("X", -1)]), expected="Failed",
         note="TestPodPhaseWithRestartNeverInitContainers: waiting, terminated non-zero"),
    case(pod("Always", init=("X",)), Statuses([crash_looping("X", 0)]), expected="Pending",
         note="TestPodPhaseWithRestartAlwaysInitContainers: waiting, terminated zero"),
    case(pod("Always", init=("X",)), Statuses([exited("X", 0), running("A"), running("B")]), expected="Running",
         note="TestPodPhaseWithRestartAlwaysInitContainers: init container succeeded"),
])

# %% [markdown]
# ## Exercise 2: does it restart?
#
# `ShouldContainerBeRestarted` looks at the container's **newest instance** in the runtime (not
# the API status) and the Pod's policy. Write `should_restart(policy, state, exit_code, deleted)`:
# `state` is the newest instance's runtime state, `"none"` when there is no instance at all, or
# one of `"running"`, `"exited"`, `"unknown"`, `"created"`; `deleted` says whether the Pod has a
# `deletionTimestamp`. In order:
#
# 1. a Pod being deleted never restarts anything;
# 2. no instance: start it;
# 3. running: no;
# 4. unknown or created: start it;
# 5. exited: not under `Never`; not under `OnFailure` with exit code 0; otherwise yes.
#
# An empty policy (`""`) is neither `Never` nor `OnFailure`.

# %%
def should_restart(policy: str, state: str, exit_code: int, deleted: bool) -> bool:
    """Whether the kubelet starts the container (again)."""
    # BEGIN SOLUTION
    meta = V1ObjectMeta(uid="u", name="p", namespace="n",
                        deletion_timestamp=datetime(2023, 1, 1, tzinfo=timezone.utc) if deleted else None)
    the_pod = V1Pod(metadata=meta, spec=V1PodSpec(restart_policy=policy, containers=[V1Container(name="c")]))
    statuses = [] if state == "none" else [kc.Status(id="c1", name="c", state=state, exit_code=exit_code)]
    pod_status = kc.PodStatus(id="u", name="p", namespace="n", container_statuses=statuses)
    return kc.should_container_be_restarted(the_pod.spec.containers[0], the_pod, pod_status)
    # END SOLUTION


# %%
T = "TestShouldContainerBeRestarted"
check("Exercise 2: does it restart?", should_restart, [
    *[case(policy, "none", 0, False, expected=True, note=f"{T}: no-history") for policy in ("Never", "OnFailure", "Always")],
    *[case(policy, "running", 0, False, expected=False, note=f"{T}: alive") for policy in ("Never", "OnFailure", "Always")],
    case("Never", "exited", 0, False, expected=False, note=f"{T}: succeed"),
    case("OnFailure", "exited", 0, False, expected=False, note=f"{T}: succeed"),
    case("Always", "exited", 0, False, expected=True, note=f"{T}: succeed"),
    case("Never", "exited", 1, False, expected=False, note=f"{T}: failed"),
    case("OnFailure", "exited", 1, False, expected=True, note=f"{T}: failed"),
    case("Always", "exited", 1, False, expected=True, note=f"{T}: failed"),
    *[case(policy, "unknown", 0, False, expected=True, note=f"{T}: unknown") for policy in ("Never", "OnFailure", "Always")],
    case("Never", "created", 0, False, expected=True, note="helpers.go: created counts as unknown"),
    *[case(policy, state, 1, True, expected=False, note=f"{T}: the deleted pod")
      for policy in ("Never", "OnFailure", "Always") for state in ("none", "exited", "unknown")],
    case("", "exited", 0, False, expected=True, note="an empty policy restarts like Always"),
])

# %% [markdown]
# ## Exercise 3: the CrashLoopBackOff delays
#
# The kubelet's back-off starts at 10 s and doubles, capped at 300 s (`backOffPeriod` and
# `MaxContainerBackOff` in `pkg/kubelet/kubelet.go`). Before it restarts an exited container,
# `doBackOff` measures from the moment that instance **finished**:
#
# - **no entry yet**, or an entry that has **expired** (the instance finished *more than* 600 s,
#   twice the cap, after the entry was last moved on): the restart is immediate, and the entry is
#   set to 10 s;
# - otherwise the restart waits the entry's current delay after the finish; then the entry
#   doubles (at most 300 s).
#
# "Moved on" means the moment of the restart that set or doubled it. The container's first start
# is never delayed and does not touch the entry.
#
# Write `restart_waits(run_seconds)`: the container starts at time 0; its *i*-th instance runs for
# `run_seconds[i]` seconds and then crashes, and is restarted as soon as the back-off allows.
# Return how many seconds each restart waited after its crash, as a list of ints (one per crash).

# %%
def restart_waits(run_seconds: list) -> list:
    """The wait before each restart of a container that crashes after the given run times."""
    # BEGIN SOLUTION
    clock = Clock()
    back_off = new_container_back_off(clock)
    waits = []
    for ran in run_seconds:
        clock.advance(timedelta(seconds=ran))
        finished = clock.now()
        waited = 0
        if back_off.is_in_back_off_since("c", finished):
            waited = int(back_off.get("c").total_seconds())
            clock.advance(back_off.get("c"))
        back_off.next("c", finished)
        waits.append(waited)
    return waits
    # END SOLUTION


# %%
check("Exercise 3: the CrashLoopBackOff delays", restart_waits, [
    case([0], expected=[0], note="the first restart is immediate (k/k#123602)"),
    case([0, 0, 0], expected=[0, 10, 20], note="10 s, doubling"),
    case([0] * 8, expected=[0, 10, 20, 40, 80, 160, 300, 300], note="capped at MaxContainerBackOff, 300 s"),
    case([5, 5, 5, 5], expected=[0, 10, 20, 40], note="measured from the finish: running time does not count"),
    case([0, 0, 0, 700, 0], expected=[0, 10, 20, 0, 10], note="TestBackoffReset: 2 x max of quiet starts over"),
    case([0, 0, 601, 0], expected=[0, 10, 0, 10], note="601 s after the last move: expired"),
    case([0, 0, 600, 0], expected=[0, 10, 20, 40], note="exactly 600 s is not expired (strict >)"),
    case([0] * 6 + [590, 0], expected=[0, 10, 20, 40, 80, 160, 300, 300],
         note="TestBackoffHighWaterMark: less quiet keeps the cap"),
])

# %% [markdown]
# ## Exercise 4: one sync of a Pod with init containers
#
# In v1.27 init containers run **one at a time**: each sync starts at most one, and the app
# containers are not looked at until the last init container has exited 0. Write
# `sync_actions(policy, inits, apps)` for a Pod whose sandbox is ready:
#
# - `inits` lists the init containers in spec order as `(name, state, exit_code)`, with `state`
#   one of `"none"` (no instance), `"running"`, `"exited"`, `"unknown"`;
# - `apps` lists the app containers as `(name, state)`, `state` `"none"` or `"running"`.
#
# Return one string: `"kill pod"`, `"start NAME"` for the next init container, `"start A, B"` for
# the app containers to start (in spec order), or `"nothing"`.
#
# `findNextInitContainerToRun` decides for init containers:
#
# 1. initialisation is done if there are no init containers or any **app** container runs;
# 2. scanning from the **last** init container back, the first that *failed* (exited non-zero,
#    or `unknown`) is started again; under `Never` the Pod is killed instead;
# 3. otherwise, scanning from the last back, the first that has an instance decides: running
#    means wait (`"nothing"`); exited 0 means the next one starts, or, if it was the last,
#    initialisation is done;
# 4. no instance at all: the first init container starts.
#
# Once initialisation is done, every app container that is not running starts (a container with
# no instance always starts, whatever the policy). If nothing runs and nothing is to start, the
# Pod is killed.

# %%
def sync_actions(policy: str, inits: list, apps: list) -> str:
    """What computePodActions decides for a Pod with a ready sandbox."""
    # BEGIN SOLUTION
    the_pod = V1Pod(metadata=V1ObjectMeta(uid="u", name="p", namespace="n"),
                    spec=V1PodSpec(restart_policy=policy, containers=[V1Container(name=n) for n, _ in apps],
                                   init_containers=[V1Container(name=n) for n, _, _ in inits] or None))
    instances = [kc.Status(id=f"id-{n}", name=n, state=s, exit_code=code) for n, s, code in inits if s != "none"]
    instances += [kc.Status(id=f"id-{n}", name=n, state=s, hash=kc.hash_container(c))
                  for (n, s), c in zip(apps, the_pod.spec.containers) if s != "none"]
    status = kc.PodStatus(id="u", name="p", namespace="n", container_statuses=instances,
                          sandbox_statuses=[kc.SandboxStatus(id="sandbox", ip="10.0.0.1")])
    actions = compute_pod_actions(the_pod, status)
    if actions.kill_pod:
        return "kill pod"
    if actions.next_init_container_to_start is not None:
        return f"start {actions.next_init_container_to_start.name}"
    if actions.containers_to_start:
        return "start " + ", ".join(the_pod.spec.containers[i].name for i in actions.containers_to_start)
    return "nothing"
    # END SOLUTION


# %%
class Containers(list):
    """(name, state[, exit code]) tuples, shown as [init1:exit 0, init2:none] in the check tables."""

    def __repr__(self) -> str:
        def show(t):
            name, state = t[0], t[1]
            return f"{name}:exit {t[2]}" if state == "exited" else f"{name}:{state}"
        return "[" + ", ".join(show(t) for t in self) + "]"


I = "TestComputePodActionsWithInitContainers"
done3 = [("init1", "exited", 0), ("init2", "exited", 0), ("init3", "exited", 0)]
apps3 = Containers([("foo1", "none"), ("foo2", "none"), ("foo3", "none")])
check("Exercise 4: one sync of a Pod with init containers", sync_actions, [
    case("Always", Containers(done3), apps3, expected="start foo1, foo2, foo3", note=f"{I}: initialization completed"),
    case("Always", Containers([("init1", "none", 0), ("init2", "none", 0), ("init3", "none", 0)]), apps3, expected="start init1",
         note=f"{I}: no init containers have been started"),
    case("Always", Containers(done3[:2] + [("init3", "running", 0)]), apps3, expected="nothing",
         note=f"{I}: initialization in progress"),
    case("Always", Containers(done3[:2] + [("init3", "exited", 137)]), apps3, expected="start init3",
         note=f"{I}: failed; restart the last init container (Always)"),
    case("OnFailure", Containers(done3[:2] + [("init3", "exited", 137)]), apps3, expected="start init3",
         note=f"{I}: failed; restart the last init container (OnFailure)"),
    case("Never", Containers(done3[:2] + [("init3", "exited", 137)]), apps3, expected="kill pod",
         note=f"{I}: failed; kill pod if RestartPolicy == Never"),
    case("Always", Containers(done3[:2] + [("init3", "unknown", 0)]), apps3, expected="start init3",
         note=f"{I}: state unknown; kill and recreate it"),
    case("Never", Containers(done3[:2] + [("init3", "unknown", 0)]), apps3, expected="kill pod",
         note=f"{I}: state unknown; kill pod if Never"),
    case("Always", Containers([("init1", "none", 0), ("init2", "none", 0), ("init3", "running", 0)]), apps3, expected="nothing",
         note=f"{I}: statuses missing but the last is running"),
    case("Always", Containers([("init1", "exited", 0), ("init2", "none", 0), ("init3", "none", 0)]), apps3, expected="start init2",
         note="findNextInitContainerToRun: the one after the last that succeeded"),
    case("Always", Containers([("init1", "exited", 1), ("init2", "exited", 0)]), Containers([("app", "none")]), expected="start init1",
         note="findNextInitContainerToRun: a failed one is rerun, scanning from the end"),
    case("Always", Containers([("init1", "none", 0)]), Containers([("app", "running")]), expected="nothing",
         note="findNextInitContainerToRun: an app container runs, so initialised"),
    case("Never", Containers(), Containers([("a", "running"), ("b", "none")]), expected="start b",
         note="computePodActions: no init containers; a container with no instance starts"),
])

# %% [markdown]
# ## Exercise 5: what the PLEG reports
#
# Every second the PLEG lists the runtime and compares each container with the previous
# listing. It sees four states: `running`, `exited`, `unknown` (the runtime's `created` counts
# as unknown too) and `non-existent` (not in the listing). For each container whose state
# changed:
#
# - now running: `ContainerStarted`;
# - now exited: `ContainerDied`;
# - now unknown: `ContainerChanged`, which is generated but **never sent**;
# - now non-existent: `ContainerRemoved` if it had exited before, otherwise `ContainerDied`
#   **and** `ContainerRemoved`, in that order.
#
# Write `relist_events(before, now)`: `before` and `now` map container IDs to the runtime state
# of one Pod's containers at two successive relists (`"running"`, `"exited"`, `"unknown"` or
# `"created"`; an ID missing from a map is not in that listing). Return the events sent, as
# `(event type, container ID)` tuples, ordered by container ID.

# %%
def relist_events(before: dict, now: dict) -> list:
    """The events the generic PLEG sends for one Pod between two listings."""
    # BEGIN SOLUTION
    sent = []
    for cid in sorted(set(before) | set(now)):
        old = convert_state(before[cid]) if cid in before else PLEG_NON_EXISTENT
        new = convert_state(now[cid]) if cid in now else PLEG_NON_EXISTENT
        sent += [(e.type, cid) for e in generate_events("pod", cid, old, new) if e.type != CONTAINER_CHANGED]
    return sent
    # END SOLUTION


# %%
R = "TestRelisting"
first = {"c1": "exited", "c2": "running", "c3": "unknown"}
check("Exercise 5: what the PLEG reports", relist_events, [
    case({}, first, expected=[("ContainerDied", "c1"), ("ContainerStarted", "c2")],
         note=f"{R}: pod 1234, first relist (c3 unknown: not sent)"),
    case(first, first, expected=[], note=f"{R}: nothing changed, no events"),
    case(first, {"c2": "exited", "c3": "running"},
         expected=[("ContainerRemoved", "c1"), ("ContainerDied", "c2"), ("ContainerStarted", "c3")],
         note=f"{R}: pod 1234, second relist"),
    case({}, {"c1": "exited"}, expected=[("ContainerDied", "c1")], note=f"{R}: pod 4567, first relist"),
    case({"c1": "exited"}, {"c4": "running"}, expected=[("ContainerRemoved", "c1"), ("ContainerStarted", "c4")],
         note=f"{R}: pod 4567, second relist"),
    case({"c1": "running", "c2": "running", "c3": "exited"}, {"c1": "running"},
         expected=[("ContainerDied", "c2"), ("ContainerRemoved", "c2"), ("ContainerRemoved", "c3")],
         note="TestDetectingContainerDeaths: missing containers"),
    case({"c2": "running"}, {}, expected=[("ContainerDied", "c2"), ("ContainerRemoved", "c2")],
         note="TestDetectingContainerDeaths: the whole pod is gone"),
    case({"c1": "running"}, {"c1": "exited"}, expected=[("ContainerDied", "c1")],
         note="generateEvents: a running container exited"),
    case({}, {"c1": "created"}, expected=[], note="convertState: created is unknown, not sent"),
    case({"c1": "created"}, {"c1": "running"}, expected=[("ContainerStarted", "c1")],
         note="generateEvents: from unknown to running"),
])

# %% [markdown]
# ## Exercise 6: the grace period of a container stop
#
# `killContainer` stops one container. Its grace period comes from `setTerminationGracePeriod`,
# then a floor, then the caller's override:
#
# 1. the Pod's `deletionGracePeriodSeconds`, if set;
# 2. else, if the Pod's `terminationGracePeriodSeconds` is set: for a kill whose reason is
#    `"LivenessProbe"` (or `"StartupProbe"`) and whose probe has its own
#    `terminationGracePeriodSeconds`, the probe's; otherwise the Pod's;
# 3. else 2;
# 4. then at least 2 (`minimumGracePeriodInSeconds`);
# 5. then, if the caller passes an override (the pod worker does, for a Pod being terminated),
#    the override replaces the result, floor or not.
#
# Write `container_grace_period(deletion, pod_grace, probe_grace, reason, override)`; each of the
# numbers may be `None` (not set). The probe is the container's liveness probe.

# %%
def container_grace_period(deletion, pod_grace, probe_grace, reason: str, override) -> int:
    """The grace period killContainer passes to the runtime's StopContainer."""
    # BEGIN SOLUTION
    from mini_kubelet.kuberuntime.kuberuntime_container import kill_container
    lab_clock = Clock()
    lab_runtime = RuntimeService(lab_clock)
    the_pod = V1Pod(metadata=V1ObjectMeta(uid="u", name="p", namespace="n", deletion_grace_period_seconds=deletion),
                    spec=V1PodSpec(termination_grace_period_seconds=pod_grace, containers=[
                        V1Container(name="app", image="app", liveness_probe=V1Probe(termination_grace_period_seconds=probe_grace))]))
    sync_pod(lab_runtime, the_pod, lab_runtime.get_pod_status("u"), new_container_back_off(lab_clock), Recorder(lab_clock))
    container_id = lab_runtime.running_container("u", "app").id
    return kill_container(lab_runtime, the_pod, container_id, "app", "", reason, override, Recorder(lab_clock))
    # END SOLUTION


# %%
check("Exercise 6: the grace period of a container stop", container_grace_period, [
    case(None, 30, None, "Unknown", None, expected=30, note="the Pod's terminationGracePeriodSeconds"),
    case(5, 30, None, "Unknown", None, expected=5, note="a deletion's grace period wins"),
    case(None, 30, 7, "LivenessProbe", None, expected=7, note="a liveness kill uses the probe's own period"),
    case(None, 30, 7, "Unknown", None, expected=30, note="... but only for a liveness kill"),
    case(5, 30, 7, "LivenessProbe", None, expected=5, note="the deletion's period comes before the probe's"),
    case(None, 1, None, "Unknown", None, expected=2, note="never below minimumGracePeriodInSeconds"),
    case(None, 30, None, "Unknown", 1, expected=1, note="an override is applied after the floor"),
    case(None, None, None, "Unknown", None, expected=2, note="nothing set: 2"),
    case(None, None, 7, "LivenessProbe", None, expected=2, note="the probe's period needs the Pod's to be set"),
])

# %% [markdown]
# ## Exercise 7: trace a Pod through a replay
#
# `mini-kubelet run` replays a lifecycle scenario through the course's whole kubelet (sources,
# sync loop, pod workers, runtime sync, PLEG and status) on a virtual clock. `replay(name)` runs
# `examples/scenarios/NAME.yaml` with `--output json` and returns the report as a dict. Its
# `"watch"` list is what `kubectl get pods -w` would print: one row per change, each a dict with
# `"time"` (seconds), `"pod"`, `"ready"`, `"status"`, `"restarts"` and `"phase"`.
#
# Write `phase_changes(report, pod)`: the `(time, phase)` of the first row of that Pod, and of
# every later row of that Pod whose phase differs from its previous row's. The check replays five
# scenarios; the **sequence** of phases in each is what `getPhase` says it must be.

# %%
def replay(name: str) -> dict:
    """The JSON report of `mini-kubelet run examples/scenarios/NAME.yaml --output json`."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        mini_kubelet(["run", str(course_path(f"examples/scenarios/{name}.yaml")), "--output", "json"])
    return json.loads(out.getvalue())


class Report(dict):
    """A replay report, shown by its scenario's name in the check tables."""

    def __repr__(self) -> str:
        return f"<replay {self['scenario']['name']}>"


crash_loop = Report(replay("lifecycle-crash-loop"))
print([row for row in crash_loop["watch"]][:4])


# %%
def phase_changes(report: dict, pod: str) -> list:
    """(time, phase) whenever the Pod's phase changes in the replay's watch rows (its first row included)."""
    # BEGIN SOLUTION
    changes = []
    for row in report["watch"]:
        if row["pod"] == pod and (not changes or changes[-1][1] != row["phase"]):
            changes.append((row["time"], row["phase"]))
    return changes
    # END SOLUTION


# %%
check("Exercise 7: trace a Pod through a replay", phase_changes, [
    case(Report(replay("lifecycle-never")), "report", expected=[(0, "Pending"), (1, "Running"), (21, "Failed")],
         note="getPhase: Never, its only container exited 1"),
    case(Report(replay("lifecycle-on-failure")), "import", expected=[(0, "Pending"), (1, "Running"), (41, "Succeeded")],
         note="getPhase: OnFailure, restarted after exit 1, then exit 0"),
    case(crash_loop, "web", expected=[(0, "Pending"), (1, "Running")],
         note="getPhase: a crash-looping container counts as stopped; Always stays Running"),
    case(Report(replay("lifecycle-init-containers")), "orders", expected=[(0, "Pending"), (11, "Running")],
         note="getPhase: Pending while an init container is pending"),
    case(Report(replay("lifecycle-graceful-deletion")), "web", expected=[(0, "Pending"), (1, "Running"), (20, "Failed")],
         note="getPhase, pod terminal: the container ended on SIGTERM (143), not 0"),
])

# %% [markdown]
# ## Exercise 8: the CrashLoopBackOff delays in v1.36
#
# *The current release.* Exercise 3 is v1.27's back-off, the same on every node: 10 s, doubling
# to 300 s. Two things changed since.
#
# - From v1.32 (kubernetes/kubernetes#128374, KEP-4603) the kubelet no longer lets client-go
#   decide when an entry starts over. It sets its own expiry, gate or no gate: an entry expires
#   when the instance finished **more than 600 s** (10 minutes) after the entry was last moved on,
#   whatever the cap. With the 300 s cap that is exactly exercise 3's rule (2 x 300 s); with a
#   smaller cap it is not.
# - The same change added `KubeletCrashLoopBackOffMax` (alpha in 1.32; beta and on by default
#   from 1.35, #135044, so on in v1.36). It lets a node's kubelet configuration set
#   `crashLoopBackOff.maxContainerRestartPeriod`, from 1 s to 300 s. That value is the cap of the
#   doubling, and the first delay is never above it: 10 s, or the cap if the cap is smaller. Left
#   unset, the cap stays 300 s.
#
# Write `restart_waits_v136(run_seconds, max_restart_period)`: exercise 3's question on a v1.36
# node whose `maxContainerRestartPeriod` is `max_restart_period` seconds, or `None` when the
# configuration does not set it. Build on your exercise 3: only the cap, the first delay and the
# expiry change. (`new_back_off(initial, cap, clock)` from `mini_kubelet.flowcontrol` takes a
# `has_expired_func(event_time, last_update, cap)` attribute that replaces the 2 x cap rule, if
# you want it.)

# %%
def restart_waits_v136(run_seconds: list, max_restart_period) -> list:
    """The wait before each restart on a v1.36 node, with the kubelet config's maxContainerRestartPeriod (or None)."""
    # BEGIN SOLUTION
    cap = timedelta(seconds=300 if max_restart_period is None else max_restart_period)
    clock = Clock()
    back_off = new_back_off(min(timedelta(seconds=10), cap), cap, clock)
    back_off.has_expired_func = lambda event_time, last_update, _cap: event_time - last_update > timedelta(seconds=600)
    waits = []
    for ran in run_seconds:
        clock.advance(timedelta(seconds=ran))
        finished = clock.now()
        waited = 0
        if back_off.is_in_back_off_since("c", finished):
            waited = int(back_off.get("c").total_seconds())
            clock.advance(back_off.get("c"))
        back_off.next("c", finished)
        waits.append(waited)
    return waits
    # END SOLUTION


# %%
check("Exercise 8: the CrashLoopBackOff delays in v1.36", restart_waits_v136, [
    case([0] * 6, 30, expected=[0, 10, 20, 30, 30, 30],
         note='container_restart_test.go "Alternate restart backs off": a 30 s cap'),
    case([5] * 8, 30, expected=[0, 10, 20, 30, 30, 30, 30, 30],
         note="lifecycle-crash-loop-max.yaml: the replay's backOff column"),
    case([0] * 8, None, expected=[0, 10, 20, 40, 80, 160, 300, 300],
         note="newCrashLoopBackOff: unset, the cap stays MaxContainerBackOff (as in v1.27)"),
    case([0] * 4, 5, expected=[0, 5, 5, 5], note="newCrashLoopBackOff: the first delay is never above the cap"),
    case([0] * 3, 1, expected=[0, 1, 1], note="validation.go: 1 s, the smallest cap allowed"),
    case([0, 0, 0, 61, 0], 30, expected=[0, 10, 20, 30, 30],
         note="kubelet.go HasExpiredFunc: 61 s of quiet is not 10 minutes (2 x cap would have reset)"),
    case([0, 0, 0, 601, 0], 30, expected=[0, 10, 20, 0, 10],
         note="TestAlternateHasExpiredFunc: past the kubelet's 600 s, it starts over"),
    case([0, 0, 0, 600, 0], 30, expected=[0, 10, 20, 30, 30], note="exactly 600 s is not expired (strict >)"),
    case([0, 0, 0, 700, 0], None, expected=[0, 10, 20, 0, 10], note="TestBackoffReset: the same as in v1.27"),
])

# %% [markdown]
# ## What you learned
#
# - The phase is computed from the container statuses and the restart policy at every sync: a
#   Pod whose only container exited 1 under `Never` is `Failed`; a crash-looping container
#   counts as stopped, so an `Always` Pod stays `Running`.
# - A container restarts when its newest instance exited and the policy allows it (`Always`:
#   any exit; `OnFailure`: a non-zero one; `Never`: none); with no instance, or in an unknown
#   state, it starts whatever the policy; in a Pod being deleted, nothing restarts.
# - The crash-loop delays are 0, 10, 20, 40, 80, 160 and then 300 s, measured from the finish;
#   they start over once more than 600 s passed since the delay last moved on. In v1.36 a node's
#   kubelet config may cap them lower (`crashLoopBackOff.maxContainerRestartPeriod`, on from 1.35),
#   and from 1.32 they start over after 10 minutes of quiet whatever the cap.
# - In v1.27 init containers run one per sync, in order; a failed one is retried in place, or
#   kills the Pod under `Never`; the app containers wait for the last one.
# - The PLEG reports states, not histories: each relist compares two listings and sends
#   `ContainerStarted`, `ContainerDied` or `ContainerRemoved`; `ContainerChanged` is never sent.
# - A replay shows the same rules at work over time: a `Never` Pod ends `Failed`, an `Always` Pod
#   in a crash loop stays `Running`, an init-container Pod is `Pending` until the last one succeeds.
# - A container stopped during a sync gets its deletion's, probe's or Pod's grace period, at least
#   2 s; a Pod being terminated passes its own grace period as an override, which has no floor.
#
# `mini_kubelet`'s `kubelet_pods`, `container`, `flowcontrol`, `kuberuntime` and `pleg` modules implement
# these rules with the upstream names; chapter 1 reads each of them.
