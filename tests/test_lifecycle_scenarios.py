"""Chapter 1: every lifecycle example replays to its `expect:` block, and `mini-kubelet run` reports it.

The outcomes come from the real modules wired by mini_kubelet.kubelet_main (pod workers, SyncPod with
flowcontrol's back-off, PLEG, status manager); the facts checked here independently of the expect blocks
are upstream's: the back-off doubles from 10 s to a 300 s cap (kubelet.go backOffPeriod,
MaxContainerBackOff), a Never pod whose only container failed is Failed (kubelet_pods.go getPhase), an OOM
kill is exit 137 with reason OOMKilled, and a deletion's grace period is the one killPod gets
(pod_workers.go calculateEffectiveGracePeriod).
"""

from __future__ import annotations

import json

import pytest

from mini_kubelet.cmd import run_lifecycle_report
from mini_kubelet.cmd.main import main
from mini_kubelet.sim.lifecycle.expect import check_lifecycle_expect
from mini_kubelet.sim.lifecycle.replay import run_lifecycle

from .conftest import EXAMPLES

pytestmark = pytest.mark.ch1

SCENARIOS = EXAMPLES / "scenarios"
LIFECYCLE = sorted(SCENARIOS.glob("lifecycle-*.yaml"))
REQUIRED = {"lifecycle-running", "lifecycle-init-containers", "lifecycle-crash-loop", "lifecycle-never",
            "lifecycle-on-failure", "lifecycle-liveness", "lifecycle-oom-kill", "lifecycle-graceful-deletion",
            "lifecycle-static-pod"}


def replay(name: str):
    return run_lifecycle(SCENARIOS / f"{name}.yaml")


def test_the_required_examples_exist():
    assert REQUIRED <= {p.stem for p in LIFECYCLE}


@pytest.mark.parametrize("path", LIFECYCLE, ids=lambda p: p.stem)
def test_example_meets_its_expect_block(path, capsys):
    timeline = run_lifecycle(path)
    checked, failures = check_lifecycle_expect(timeline)
    assert timeline.scenario.expect and timeline.scenario.description
    assert checked >= 2 and failures == []
    assert main(["run", str(path)]) == 0
    assert f"expect: all {checked} checks passed" in capsys.readouterr().out


def test_crash_loop_back_off_doubles_to_the_cap():
    """flowcontrol.Backoff with the kubelet's 10 s and 300 s: the first restart at once, then 10 s, 20 s, ... 5 m."""
    timeline = replay("lifecycle-crash-loop")
    assert [r.back_off for r in timeline.restarts] == [None, 10, 20, 40, 80, 160, 300]
    # each restart waits at least its back-off after the previous exit (5 s after the previous start)
    for before, after in zip(timeline.restarts, timeline.restarts[1:]):
        assert after.time - (before.time - 1 + 5) >= after.back_off
    waiting = [c for c in timeline.containers if c.reason == "CrashLoopBackOff"]
    assert waiting and all(c.state == "waiting" for c in waiting)


def test_never_with_a_failed_container_is_failed_and_not_restarted():
    timeline = replay("lifecycle-never")
    assert timeline.final["report"]["phase"] == "Failed"
    assert timeline.restarts == []
    state = timeline.final["report"]["containerStatuses"][0]["state"]["terminated"]
    assert (state["exitCode"], state["reason"]) == (1, "Error")


def test_oom_kill_is_exit_137_and_restarts():
    timeline = replay("lifecycle-oom-kill")
    last = timeline.final["web"]["containerStatuses"][0]["lastState"]["terminated"]
    assert (last["exitCode"], last["reason"]) == (137, "OOMKilled")
    assert not any(e["reason"] == "Killing" for e in timeline.events)  # the kernel killed it, not the kubelet


def test_graceful_deletion_uses_the_deletion_grace_period_and_removes_the_pod():
    timeline = replay("lifecycle-graceful-deletion")
    assert timeline.kills == [{"time": 20, "pod": "web", "gracePeriod": 45}]
    assert any(h["text"] == "web is removed from the API server" for h in timeline.happenings)
    assert timeline.watch[-1].status == "Terminating"


@pytest.mark.parametrize("release, grace, sigkill", [("1.27", 30, 80), ("1.36", 2, 52)])
def test_a_pre_stop_hook_longer_than_the_grace_period(release, grace, sigkill):
    """kuberuntime_container.go killContainer: the 60 s hook is waited for 30 s (SIGTERM at 50 s); v1.27.7 then
    gives StopContainer the pod worker's 30 s again, 1.28+ (#115835) what is left, raised to the 2 s floor."""
    from mini_kubelet import features
    with features.release_profile(release):
        timeline = replay("lifecycle-prestop")
    assert timeline.kills == [{"time": 20, "pod": "web", "gracePeriod": 30}]
    assert timeline.stops == [{"time": 20, "pod": "web", "container": "app", "preStop": 30, "preStopRuns": 60,
                               "gracePeriod": grace, "sigterm": 50, "sigkillBy": sigkill}]


def test_a_hook_without_a_duration_ends_at_once_and_the_process_keeps_its_run():
    """A manifest's preStop hook with no preStopDuration takes 0 s; preStopDuration with after: keeps the process plan."""
    from mini_kubelet.sim.lifecycle.scenario import load_lifecycle_scenario
    doc = {"replay": "lifecycle", "pods": [{"manifest": {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "c", "image": "x", "lifecycle": {"preStop": {"httpGet": {"path": "/quit", "port": 80}}}},
            {"name": "d", "image": "x", "lifecycle": {"preStop": {"exec": {"command": ["true"]}}}}]}},
        "run": {"c": {"after": "50s", "exitCode": 0, "preStopDuration": "5s"}}}],
        "events": [{"at": "10s", "delete": {"pod": "p"}}]}
    scenario = load_lifecycle_scenario(doc, "inline", EXAMPLES, "inline")
    assert scenario.pods[0].pre_stop == {"c": 5} and scenario.pods[0].run["c"]["after"] == 50
    timeline = run_lifecycle(scenario)
    assert sorted((s["container"], s["preStop"], s["gracePeriod"]) for s in timeline.stops) == [("c", 5, 30), ("d", 0, 30)]


def _cannot_terminate_gracefully(hook: bool) -> dict:
    """container_lifecycle_test.go's pod: busybox `sleep 10000`, 30 s of grace, optionally a preStop `sleep 10000`."""
    container = {"name": "busybox", "image": "busybox", "command": ["sleep", "10000"]}
    run = {}
    if hook:
        container["lifecycle"] = {"preStop": {"exec": {"command": ["sleep", "10000"]}}}
        run = {"busybox": {"preStopDuration": "10000s"}}
    return {"replay": "lifecycle", "duration": "2m", "pods": [{"manifest": {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pod-termination-grace-period"},
        "spec": {"terminationGracePeriodSeconds": 30, "containers": [container]}}, "run": run}],
        "events": [{"at": "10s", "delete": {"pod": "pod-termination-grace-period"}}]}


@pytest.mark.parametrize("release, hook, within", [
    ("1.27", False, True), ("1.36", False, True),
    ("1.27", True, False),  # the v1.27 quirk the test was written against: 30 s of hook, then 30 s again
    ("1.36", True, True),
])
def test_pod_termination_respects_the_grace_period(release, hook, within):
    """test/e2e_node/container_lifecycle_test.go "Pod Termination", "a pod cannot terminate gracefully": should respect
    termination grace period seconds [with long-running preStop hook] (added by #115835; read in a stored copy with
    the 10 s buffer and the [NodeConformance] names of v1.28). The Pod must be gone within grace period + 10 s of
    the deletion; here, by when a node would have sent SIGKILL to a process that ignores SIGTERM."""
    from mini_kubelet import features
    from mini_kubelet.sim.lifecycle.scenario import load_lifecycle_scenario
    grace_period, buffer_seconds, deleted = 30, 10, 10
    with features.release_profile(release):
        timeline = run_lifecycle(load_lifecycle_scenario(_cannot_terminate_gracefully(hook), "inline", EXAMPLES, "e2e"))
    assert timeline.kills == [{"time": deleted, "pod": "pod-termination-grace-period", "gracePeriod": grace_period}]
    sigkill = timeline.stops[0]["sigkillBy"] if timeline.stops else deleted + grace_period  # no hook: the kill's period
    assert (sigkill - deleted <= grace_period + buffer_seconds) is within


def test_static_pod_survives_the_deletion_of_its_mirror_pod():
    timeline = replay("lifecycle-static-pod")
    texts = [h["text"] for h in timeline.happenings]
    assert sum("created in the API" in t for t in texts) == 2  # the first mirror pod, and its replacement
    assert timeline.kills == [] and timeline.restarts == []
    assert [w.status for w in timeline.watch] == ["ContainerCreating", "Running"]


def test_json_output_is_the_documented_structure(capsys):
    assert main(["run", str(SCENARIOS / "lifecycle-on-failure.yaml"), "--output", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["version"] == run_lifecycle_report.VERSION == "mini-kubelet.lifecycle/v1"
    assert set(doc) == {"version", "profile", "scenario", "watch", "containers", "restarts", "events", "kills", "happenings",
                        "final", "expect"}
    assert doc["scenario"]["pods"] == [{"name": "import", "namespace": "batch", "uid": "import", "source": "api",
                                        "at": 0, "restartPolicy": "OnFailure"}]
    assert doc["restarts"] == [{"time": 11, "pod": "import", "container": "import", "count": 1, "exitCode": 2,
                                "reason": "Error", "backOff": None}]
    assert doc["watch"][-1] == {"time": 41, "pod": "import", "ready": "0/1", "status": "Completed", "restarts": 1,
                                "phase": "Succeeded"}
    assert doc["final"]["import"]["phase"] == "Succeeded" and doc["expect"]["failures"] == []


def test_plot_draws_each_container(tmp_path):
    out = tmp_path / "crash.png"
    assert main(["run", str(SCENARIOS / "lifecycle-init-containers.yaml"), "--plot", str(out)]) == 0
    assert out.read_bytes().startswith(b"\x89PNG")


def test_a_different_outcome_exits_1(tmp_path, capsys):
    text = (SCENARIOS / "lifecycle-never.yaml").read_text().replace("phase: Failed, status: Error, restarts: 0",
                                                                    "phase: Succeeded, status: Error, restarts: 0")
    scenario = tmp_path / "never.yaml"
    scenario.write_text(text.replace("../pods/", str(EXAMPLES / "pods") + "/"))
    assert main(["run", str(scenario)]) == 1
    out = capsys.readouterr().out
    assert "pods[2] (report at 21s).phase: expected 'Succeeded', got 'Failed'" in out


def test_a_lifecycle_scenario_from_standard_input(monkeypatch, capsys):
    import io
    import sys

    text = "replay: lifecycle\nduration: 5s\npods:\n  - manifest: {apiVersion: v1, kind: Pod, metadata: {name: p}, " \
           "spec: {containers: [{name: c, image: x}]}}\nexpect:\n  pods: [{pod: p, at: 1s, phase: Running}]\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    assert main(["run", "-"]) == 0
    assert "scenario stdin: 5s on node node-1" in capsys.readouterr().out


BAD = [
    ("replay: lifecycle\npods: []\n", "pods: a lifecycle scenario needs at least one pod"),
    ("replay: lifecycle\npods: [{manifest: {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: "
     "[{name: c, image: x}]}}, source: http}]\n", "pods[0].source: expected api (from the API server) or file"),
    ("replay: lifecycle\npods: [{manifest: {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: "
     "[{name: c, image: x}]}}}]\nevents: [{at: 5s, crash: {pod: q}}]\n", "events[0].crash.pod: no pod 'q' in pods:"),
    ("replay: lifecycle\npods: [{manifest: {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: "
     "[{name: c, image: x}]}}}]\nevents: [{at: 5s, set: {pod: p, memory: 1Gi}}]\n",
     "events[0].set: unknown field (expected one of: at, exit, crash"),
    ("replay: lifecycle\npods: [{manifest: {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: "
     "[{name: c, image: x}]}}}]\nevents: [{at: 5s, crash: {pod: p, code: 0}}]\n", "events[0].crash.code: a crash has"),
    ("replay: lifecycle\npods: [{manifest: {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: "
     "[{name: c, image: x}]}}, run: {d: {after: 1s, exitCode: 1}}}]\n", "pods[0].run.d: no such container"),
    ("replay: lifecycle\npods: [{manifest: {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: "
     "[{name: c, image: x}]}}}]\nexpect: {evictions: []}\n", "expect.evictions: unknown field"),
    ("replay: lifecycle\nduration: 2m\npods: [{manifest: {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: "
     "{containers: [{name: c, image: x}]}}}]\nevents: [{at: 3m, oomKill: {pod: p}}]\n", "events[0].at: 3m is not before the end of the replay (2m)"),
    ("replay: lifecycle\npods: [{manifest: {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {}}}]\n",
     "pods[0].manifest.spec.containers"),
    ("replay: restart\n", "replay: expected eviction (the default) or lifecycle, got 'restart'"),
    ("replay: lifecycle\npods: [{manifest: {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: "
     "[{name: c, image: x}]}}, run: {c: {preStopDuration: 60s}}}]\n",
     "pods[0].run.c.preStopDuration: container c has no lifecycle.preStop hook (exec or httpGet) to run"),
    ("replay: lifecycle\npods: [{manifest: {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: "
     "[{name: c, image: x, lifecycle: {preStop: {exec: {command: [sleep, '60']}}}}]}}, run: {c: {preStopDuration: -5s}}}]\n",
     "pods[0].run.c.preStopDuration: must not be negative, got -5s"),
]


@pytest.mark.parametrize("text,message", BAD)
def test_a_bad_scenario_is_one_line_naming_the_field_and_exit_2(tmp_path, capsys, text, message):
    scenario = tmp_path / "bad.yaml"
    scenario.write_text(text)
    assert main(["run", str(scenario)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and str(scenario) in captured.err and message in captured.err, captured.err


def test_a_lifecycle_event_in_an_eviction_scenario_names_the_field():
    """The two kinds do not mix: an eviction scenario takes only addPod, pullImage and set."""
    import yaml

    from mini_kubelet import api, sim

    doc = yaml.safe_load((SCENARIOS / "memory-hard.yaml").read_text())
    doc["pods"], doc["events"] = [], [{"at": "5s", "crash": {"pod": "leaky"}}]
    with pytest.raises(api.ManifestError, match=r"events\[0\]\.crash: unknown field \(expected one of: at, addPod"):
        sim.load_scenario(doc, name="x")


def test_a_job_is_run_through_its_pod_template_as_show_reads_it(capsys, stdin):
    """pods[].file holding a Job (as `kubectl get job -o yaml` prints it): the Pod its template makes, as show,
    explain and admit read it, with the same note."""
    job = EXAMPLES / "cluster" / "job.yaml"
    stdin(f"replay: lifecycle\nduration: 20s\npods:\n  - file: {job}\n"
          "expect:\n  pods: [{pod: report, at: 1s, phase: Running, ready: 1/1}]\n")
    assert main(["run", "-"]) == 0
    out, err = capsys.readouterr()
    assert "pods: report (from the API server)" in out
    assert (f"note: <stdin>: pods[0].file: Job batch/report: read through its Pod template (spec.template), "
            "the Pod each replica would get\n") in err
    assert main(["show", str(job)]) == 0
    assert "Job batch/report: read through its Pod template (spec.template)" in capsys.readouterr().err


def test_a_static_pod_file_holding_a_workload_is_still_refused(tmp_path, capsys):
    """The kubelet's file source decodes only Pods (pkg/kubelet/config/common.go tryDecodeSinglePod at v1.27.7)."""
    scenario = tmp_path / "static.yaml"
    scenario.write_text(f"replay: lifecycle\npods:\n  - file: {EXAMPLES / 'cluster' / 'job.yaml'}\n    source: file\n")
    assert main(["run", str(scenario)]) == 2
    assert "pods[0].file" in capsys.readouterr().err


RESET = """replay: lifecycle
duration: 17m
pods:
  - manifest: {apiVersion: v1, kind: Pod, metadata: {name: web, namespace: shop}, spec: {containers: [{name: app, image: x}]}}
events:
  - {at: 5s, crash: {pod: web, code: 1}}
  - {at: 20s, crash: {pod: web, code: 1}}
  - {at: 15m, crash: {pod: web, code: 1}}
  - {at: 15m30s, crash: {pod: web, code: 1}}
"""


@pytest.mark.parametrize("release", ["1.27", "1.36"])
def test_a_restart_after_the_back_off_reset_says_so(capsys, stdin, release):
    """flowcontrol Backoff (client-go backoff.go hasExpired, v1.27.7: more than 2 x MaxContainerBackOff = 600 s after
    the entry's last update; from 1.32 the kubelet's flat 10 min): the exit at 15m finds the entry expired, so the
    restart is immediate and the next delay is the first (10 s) again."""
    stdin(RESET)
    assert main(["run", "-", "--kubernetes-version", release]) == 0
    out = capsys.readouterr().out
    rows = [" ".join(line.split()[1:]) for line in out.split("\nrestarts\n")[1].split("\n\n")[0].splitlines()[1:]]
    assert rows == ["web/app 1 1 (Error) none (first restart)", "web/app 2 1 (Error) 10s",
                    "web/app 3 1 (Error) none (back-off reset: it ran over 10m)", "web/app 4 1 (Error) 10s"]


def test_a_sidecar_under_v1_27_is_explained_as_show_and_explain_explain_it(capsys):
    """v1.27 has no SidecarContainers: restartPolicy Always on an init container is unknown, so log-shipper is a plain
    init container that never exits (kuberuntime_container.go computeInitContainerActions, v1.27.7); the replay says
    so with show's note, which the v1.36 replay does not need."""
    assert main(["run", str(SCENARIOS / "lifecycle-sidecar.yaml"), "--kubernetes-version", "1.27"]) == 0
    out, err = capsys.readouterr()
    assert "  0s    api   0/1    Init:0/1" in out
    flat = " ".join(out.split())
    assert ("note: api: init container log-shipper has restartPolicy: Always (a sidecar from 1.28); v1.27 computes it as "
            "a plain init container. A 1.29+ kubelet adds sidecars to the containers (PodRequests): the Pod requests "
            "nothing there, nothing here. Here log-shipper must exit before the app containers start: while it runs, "
            "the Pod stays at Init:0/1") in flat
    capsys.readouterr()
    assert main(["run", str(SCENARIOS / "lifecycle-sidecar.yaml"), "--kubernetes-version", "1.36"]) == 0
    assert "note:" not in capsys.readouterr().out


STARTUP = """replay: lifecycle
duration: 30s
pods:
  - manifest:
      apiVersion: v1
      kind: Pod
      metadata: {name: web, namespace: shop}
      spec:
        containers:
          - name: app
            image: nginx
            startupProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 10, failureThreshold: 30}
"""


def test_a_startup_probe_that_has_not_succeeded_says_readiness_waits_for_it(capsys, stdin):
    """prober/worker.go doProbe and prober_manager.go UpdatePodStatus (v1.27.7): not started, so not ready, and the
    readiness and liveness probes do not run, until the startup probe succeeds."""
    stdin(STARTUP)
    assert main(["run", "-"]) == 0
    out = capsys.readouterr().out
    assert "  1s    web   0/1    Running" in out
    assert ("note: web/app is not ready: readiness waits for its startupProbe, which has not succeeded, and its "
            "readiness and liveness probes do not run before it does (the replay runs no probe: an event {probe: "
            "{pod: web, container: app, startup: success}} passes it)") in " ".join(out.split())
    stdin(STARTUP + "events:\n  - {at: 10s, probe: {pod: web, container: app, startup: success}}\n")
    assert main(["run", "-"]) == 0
    out = capsys.readouterr().out
    assert "  10s   web   1/1    Running" in out and "note:" not in out
