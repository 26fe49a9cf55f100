"""Chapter 1's pages (test_pages.py checks their objectives, key points, links, included code and notes): the
numbers and answers they state are the ones mini_kubelet computes; chapter 0 and the home page point at them."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
import yaml
from kubernetes.client import (
    V1Container, V1ContainerState, V1ContainerStateTerminated, V1ContainerStatus, V1ObjectMeta, V1Pod, V1PodSpec,
)

from mini_kubelet.clock import Clock
from mini_kubelet.cri import RuntimeService
from mini_kubelet.events import Recorder
from mini_kubelet.flowcontrol import format_duration, new_container_back_off
from mini_kubelet.kubelet_pods import generate_api_pod_status, get_phase
from mini_kubelet.kuberuntime.kuberuntime_manager import sync_pod
from mini_kubelet.reason_cache import ReasonCache

from .conftest import DOCS, ROOT

pytestmark = pytest.mark.ch1

CHAPTER = DOCS / "chapter-1"
PAGES = sorted(CHAPTER.glob("*.md"))
SECTION = "1 · From bind to Running"


def nav_entries() -> list[str]:
    nav = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)["nav"]  # BaseLoader: no !!python tags
    section = next(item for item in nav if isinstance(item, dict) and SECTION in item)
    entries = []
    for entry in section[SECTION]:
        entries += list(entry.values()) if isinstance(entry, dict) else [entry]
    return entries


def test_every_page_is_in_the_nav_between_chapters_0_and_2_and_the_lab_follows_them():
    entries = nav_entries()
    assert entries[0] == "chapter-1/index.md" and entries[-1] == "labs/01-from-bind-to-running.py"
    assert sorted(e for e in entries if e.startswith("chapter-1/")) == sorted(f"chapter-1/{p.name}" for p in PAGES)
    titles = [next(iter(item)) for item in yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)["nav"]
              if isinstance(item, dict)]
    assert titles.index(SECTION) == titles.index("0 · The kubelet at a glance") + 1
    assert titles.index("2 · Admission on the node") == titles.index(SECTION) + 1


def test_the_misconception_and_the_whole_path_are_on_the_overview():
    text = (CHAPTER / "index.md").read_text()
    assert '!!! warning "Misconception: the scheduler placed it, so it runs"' in text
    diagram = text[text.index("```mermaid\nsequenceDiagram"):]
    for step in ("Binding", "spec.nodeName", "PodConfig", "HandlePodAdditions", "UpdatePod", "computePodActions",
                 "StartContainer", "relist", "status"):
        assert step in diagram.split("```\n", 1)[0], step


@pytest.mark.parametrize("page, diagram", [("pod-workers.md", "stateDiagram-v2"), ("status-and-phases.md", "stateDiagram-v2")])
def test_state_diagrams_for_the_pod_worker_and_the_phase(page, diagram):
    assert f"```mermaid\n{diagram}" in (CHAPTER / page).read_text()


def crash_loop_restarts(restarts: int) -> tuple[list[int], list[str]]:
    """A container that crashes the moment it starts, restarted as soon as doBackOff allows: the waits and messages."""
    clock = Clock()
    back_off = new_container_back_off(clock)
    waits, messages = [], []
    for _ in range(restarts):
        finished = clock.now()
        if back_off.is_in_back_off_since("c", finished):
            messages.append(f"back-off {format_duration(back_off.get('c'))}")
            waits.append(int(back_off.get("c").total_seconds()))
            clock.advance(back_off.get("c"))
        else:
            messages.append("(not held back)")
            waits.append(0)
        back_off.next("c", finished)
    return waits, messages


def test_the_back_off_table_is_what_the_back_off_computes():
    """restarts-and-backoff.md: each row's wait and message, from flowcontrol with the kubelet's constants."""
    text = (CHAPTER / "restarts-and-backoff.md").read_text()
    rows = re.findall(r"^\| (\d)\w\w(?: and every one after)? \| (\d+) s \| `?([^|`]+?)`? \|$", text, re.M)
    assert [r[0] for r in rows] == ["1", "2", "3", "4", "5", "6", "7"]
    waits, messages = crash_loop_restarts(8)
    assert [int(r[1]) for r in rows] == waits[:7] and waits[7] == waits[6]
    assert [r[2] for r in rows] == messages[:7] and messages[7] == messages[6]
    assert "then 10 s, 20 s, 40 s, 80 s, 160 s, and 300 s (five minutes)" in text


def test_the_worked_phase_answer_is_get_phase():
    """status-and-phases.md: one container, restartPolicy Never, exit code 1."""
    pod = V1Pod(metadata=V1ObjectMeta(name="p", namespace="n", uid="u"),
                spec=V1PodSpec(restart_policy="Never", containers=[V1Container(name="app")]))
    exited = V1ContainerStatus(name="app", image="", image_id="", ready=False, restart_count=0,
                               state=V1ContainerState(terminated=V1ContainerStateTerminated(exit_code=1)))
    assert get_phase(pod, [exited], False) == "Failed"
    text = (CHAPTER / "status-and-phases.md").read_text()
    assert "**The phase is\n`Failed`.**" in text or "**The phase is `Failed`.**" in text


def test_the_crash_loop_status_on_the_page_is_what_the_kubelet_writes():
    """restarts-and-backoff.md, "What the user sees": three restarts, then the status while the fourth waits 40 s."""
    clock = Clock()
    runtime, recorder, back_off, reasons = RuntimeService(clock), Recorder(clock), new_container_back_off(clock), ReasonCache()
    pod = V1Pod(metadata=V1ObjectMeta(uid="web-uid", name="web", namespace="default"),
                spec=V1PodSpec(restart_policy="Always", containers=[V1Container(name="web", image="app")]))

    def sync():
        result = sync_pod(runtime, pod, runtime.get_pod_status("web-uid", "web", "default"), back_off, recorder)
        reasons.update("web-uid", result)
        return result

    sync()
    for wait in (0, 10, 20):  # three crashes, each restarted once its back-off has passed
        runtime.crash_container("web-uid", "web", 1)
        if wait:
            assert "CrashLoopBackOff" in sync().error()
            clock.advance(timedelta(seconds=wait))
        assert sync().error() is None
    runtime.crash_container("web-uid", "web", 1)
    assert "CrashLoopBackOff" in sync().error()
    status = generate_api_pod_status(pod, runtime.get_pod_status("web-uid", "web", "default"), False,
                                     reason_cache=reasons).container_statuses[0]
    assert status.state.waiting.reason == "CrashLoopBackOff"
    assert status.state.waiting.message == "back-off 40s restarting failed container=web pod=web_default(web-uid)"
    assert (status.last_state.terminated.exit_code, status.last_state.terminated.reason) == (1, "Error")
    assert status.restart_count == 3
    assert recorder.events[-1].reason == "BackOff"
    assert recorder.events[-1].message == "Back-off restarting failed container web in pod web_default(web-uid)"
    text = (CHAPTER / "restarts-and-backoff.md").read_text()
    block = text[text.index("```yaml\nstate:"):].split("```\n", 1)[0]
    assert "reason: CrashLoopBackOff" in block and "message: back-off 40s restarting failed container=web pod=web_default(" in block
    assert "exitCode: 1" in block and "reason: Error" in block and "restartCount: 3" in block
    assert "`Back-off\nrestarting failed container web in pod web_default(...)`" in text


def test_chapter_0_and_the_home_page_link_to_chapter_1_and_nothing_says_it_is_in_preparation():
    home = (DOCS / "index.md").read_text()
    assert "](chapter-1/index.md)" in home
    chapter_0 = "".join(p.read_text() for p in sorted((DOCS / "chapter-0").glob("*.md")))
    assert "](../chapter-1/index.md)" in chapter_0
    for text in (home, chapter_0):
        for line in text.splitlines():
            if "in preparation" in line:
                assert not re.search(r"[Cc]hapters? 1\b|From bind to Running", line), line


def test_the_periods_the_pages_name_are_the_constants():
    """sync-loop.md and pod-workers.md name the tick, housekeeping and requeue periods that the included code sets."""
    from mini_kubelet import pod_worker_types as pw
    from mini_kubelet import sync_loop
    from mini_kubelet.pleg import GENERIC_PLEG_RELIST_PERIOD, GENERIC_PLEG_RELIST_THRESHOLD

    assert (sync_loop.SYNC_PERIOD, sync_loop.HOUSEKEEPING_PERIOD) == (timedelta(seconds=1), timedelta(seconds=2))
    assert (GENERIC_PLEG_RELIST_PERIOD, GENERIC_PLEG_RELIST_THRESHOLD) == (timedelta(seconds=1), timedelta(minutes=3))
    loop = (CHAPTER / "sync-loop.md").read_text()
    assert "the 1-second sync tick, the 2-second housekeeping tick" in loop and "for three minutes" in loop
    assert (pw.RESYNC_INTERVAL, pw.BACK_OFF_ON_TRANSIENT_ERROR_PERIOD, pw.BACK_OFF_PERIOD) == (60.0, 1.0, 10.0)
    assert pw.WORKER_RESYNC_INTERVAL_JITTER_FACTOR == pw.WORKER_BACK_OFF_PERIOD_JITTER_FACTOR == 0.5
    workers = (CHAPTER / "pod-workers.md").read_text()
    for row in ("| succeeded | the resync interval (`syncFrequency`, one minute by default), plus up to half of it |",
                "| failed with \"network is not ready\" | one second, plus up to half |",
                "| failed otherwise | the back-off period, ten seconds, plus up to half |"):
        assert row in workers
    assert "every ten to fifteen seconds" in workers


def seconds(text: str) -> int:
    """A duration as the replay prints it (10s, 1m20s, 5m) in seconds."""
    match = re.fullmatch(r"(?:(\d+)m)?(?:(\d+)s)?", text)
    return int(match.group(1) or 0) * 60 + int(match.group(2) or 0)


def test_the_replayed_crash_loop_waits_what_the_back_off_table_says(capsys):
    """restarts-and-backoff.md: the replay's BACK-OFF WAITED column is the table's delays, restart by restart."""
    from mini_kubelet.cmd.main import main

    text = (CHAPTER / "restarts-and-backoff.md").read_text()
    assert "<!-- run: mini-kubelet run examples/scenarios/lifecycle-crash-loop.yaml -->" in text
    capsys.readouterr()
    assert main(["run", "examples/scenarios/lifecycle-crash-loop.yaml"]) == 0
    out = capsys.readouterr().out
    rows = out.split("\nrestarts\n", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    waited = [row.split(None, 5)[5] for row in rows]  # TIME CONTAINER COUNT LAST-EXIT (two words) WAITED
    assert waited[0] == "none (first restart)"
    table = [int(w) for w in re.findall(r"^\| \d\w\w(?: and every one after)? \| (\d+) s \|", text, re.M)]
    assert [seconds(w) for w in waited[1:]] == table[1:len(waited)]


def _flat(page: str) -> str:
    return " ".join((DOCS / page).read_text().split())


def test_kill_pod_now_waits_for_the_override_on_every_page():
    """pod_workers.go killPodNow (v1.27.7): 1.5 × the override, the spec's grace period only without one, at least 10 s;
    chapters 1 and 4 say the same, and a v1.27 hard eviction (override 0) of a 30 s Pod waits 10 s."""
    from kubernetes.client import V1ObjectMeta, V1Pod, V1PodSpec
    from mini_kubelet.pod_workers import KILL_POD_NOW_MIN_TIMEOUT, kill_pod_now

    class Workers:
        def update_pod(self, options):
            self.options = options

    pod = V1Pod(metadata=V1ObjectMeta(uid="u", name="p", namespace="n"), spec=V1PodSpec(
        containers=[], termination_grace_period_seconds=30))
    kill = kill_pod_now(Workers())
    assert KILL_POD_NOW_MIN_TIMEOUT == 10
    assert [kill(pod, True, o).timeout.total_seconds() for o in (0, 1, 30, 60, None)] == [10, 10, 45, 90, 45]
    termination = _flat("chapter-1/termination-and-grace.md")
    assert ("gives up after one and a half times **the override it was given** (the Pod's own "
            "`terminationGracePeriodSeconds` only when there is none), and at least 10 seconds") in termination
    assert "A v1.27 hard eviction passes an override of 0, so it waits 10 s" in termination
    assert "one and a half times the grace period" not in termination
    assert "max(10, g + g/2) seconds, where g is the **override**" in _flat("chapter-4/what-you-see.md")


def _stop_row(out: str) -> list[str]:
    rows = out.split("\ncontainers stopped (", 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    assert len(rows) == 1
    return rows[0].split()


@pytest.mark.parametrize("page", ["chapter-1/termination-and-grace.md", "chapter-5/playbook/stuck-terminating.md"])
def test_the_pre_stop_pages_state_what_the_replay_shows(page, capsys):
    """kuberuntime_container.go killContainer: the pages' SIGTERM and SIGKILL times for `sleep 60` with 30 s are the
    replay's, under v1.27 (override after the hook) and v1.36 (#115835: before it)."""
    from mini_kubelet.cmd.main import main

    text = _flat(page)
    assert "<!-- releases: mini-kubelet run examples/scenarios/lifecycle-prestop.yaml -->" in text
    assert "subtracts the time it took" not in text and "counts against the same period" not in text
    capsys.readouterr()
    assert main(["run", "examples/scenarios/lifecycle-prestop.yaml"]) == 0
    old = _stop_row(capsys.readouterr().out)
    assert main(["run", "examples/scenarios/lifecycle-prestop.yaml", "--kubernetes-version", "1.36"]) == 0
    new = _stop_row(capsys.readouterr().out)
    # TIME CONTAINER WAITED of RUNS: cut off GRACE SIGTERM SIGKILL (...)
    assert old[:7] == ["20s", "web/app", "30s", "of", "1m:", "cut", "off"] and new[:7] == old[:7]
    assert (old[7], old[8], old[9]) == ("30s", "50s", "1m20s") and (new[7], new[8], new[9]) == ("2s", "50s", "52s")
    assert "SIGKILL at 1m20s" in text and "SIGKILL by 52 s" in text
    assert "SIGTERM at 50 s" in text


def test_the_init_containers_the_prose_names_are_the_replayed_pods():
    """runtime-sync.md: the init containers the worked example names, in order, are those of the Pod its replay runs."""
    text = (CHAPTER / "runtime-sync.md").read_text()
    prose = re.search(r"So a Pod with init containers (.*?)Each\nsync in between", text, re.S).group(1)
    scenario = re.search(r"So a Pod with init containers.*?<!-- run: mini-kubelet run (\S+) -->", text, re.S).group(1)
    pod_file = yaml.safe_load((ROOT / scenario).read_text())["pods"][0]["file"]
    pod = yaml.safe_load(((ROOT / scenario).parent / pod_file).read_text())
    init = [c["name"] for c in pod["spec"]["initContainers"]]
    named = re.findall(r"`([\w-]+)`", prose)
    assert named[:2] == init and set(named) == set(init)
