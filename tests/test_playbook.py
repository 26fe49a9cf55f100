"""Chapter 5's playbook: each symptom page reproduces its symptom with a command on a scenario or a manifest,
then runs the same input with one change, a kubelet setting or a Pod field, and the outcome changes.

Checked here: every playbook scenario meets its `expect:` block; each page runs its symptom and its fix;
the fix's file differs from the symptom's in exactly the setting the page names (comparing the two decoded
documents, description and expect aside); the outcome differs in the way the page says; and the statuses,
reasons, messages and numbers the page quotes are in the commands' output.
"""

from __future__ import annotations

import functools
import json
import re
import shlex
from dataclasses import dataclass
from typing import Any, Callable

import pytest
import yaml

from hooks.course import ANY_COMMAND_MARKER, run_commands
from mini_kubelet.cmd.main import main
from mini_kubelet.sim import check_expect, run_scenario
from mini_kubelet.sim.lifecycle.expect import check_lifecycle_expect
from mini_kubelet.sim.lifecycle.replay import run_lifecycle
from mini_kubelet.sim.lifecycle.scenario import is_lifecycle

from .conftest import DOCS, EXAMPLES, ROOT

pytestmark = pytest.mark.ch5

PLAYBOOK = DOCS / "chapter-5" / "playbook"
SCENARIOS = sorted((EXAMPLES / "scenarios" / "playbook").glob("*.yaml"))
MANIFESTS = sorted((EXAMPLES / "playbook").glob("*.yaml"))
ADMIT_ON = "--node examples/nodes/small-worker.yaml --running examples/pods/admission-running.yaml"
UNDER_PRESSURE = "--node examples/cluster/node-memory-pressure.yaml --brief"
IGNORED = {"description", "expect"}  # what a fix file may say differently: its own story and its own outcome


@dataclass
class Case:
    page: str
    symptom: str  # the command of the page's what-you-see marker
    fix: str  # the command of its what-changes-the-outcome marker
    changed: tuple  # where the fix's document differs from the symptom's
    setting: str  # the setting as the page names it
    outcome: Callable[[dict], Any]  # what the replay or the report decides, from its --output json
    symptom_outcome: Any  # that outcome for the symptom's file
    fix_outcome: Any  # and for the fix's
    quotes: tuple = ()  # strings the page quotes, each in the commands' output
    shown: str = ""  # the what-you-see marker, when the symptom is shown with another replay than the fix's pair


def evictions(report: dict) -> list:
    return [(e["pod"], e["time"]) for step in report["steps"] for e in step["evictions"]]


def over_limit_notes(report: dict) -> list:
    return [(step["time"], note.split(":")[0]) for step in report["steps"] for note in step["notes"]
            if "the kernel would OOM-kill it" in note]


def condition_and_admissions(report: dict) -> tuple:
    return ([(c["type"], c["from"], c["to"]) for c in report["conditions"]],
            sorted((a["pod"], a["admitted"]) for a in report["admissions"]))


def last_status(report: dict) -> tuple:
    row = report["watch"][-1]
    return row["phase"], row["status"], len(report["restarts"])


def killed_with(report: dict) -> list:
    return [(k["pod"], k["gracePeriod"]) for k in report["kills"]]


def resize_conditions(report: dict) -> list:
    return [(r["time"], r["pod"], r["type"], r["status"], r["reason"]) for r in report.get("resizes", [])]


def mirror_and_kills(report: dict) -> tuple:
    return report["watch"][-1]["status"], killed_with(report)


def verdict(report: dict) -> list:
    return [(p["admitted"], (p.get("status") or {}).get("reason") or None) for p in report["pods"]]


def container_cpu_max(report: dict) -> list:
    return [(c["kind"], f["value"]) for c in report["cgroups"] if c["kind"] in ("pod", "container")
            for f in c["files"] if f["name"] == "cpu.max"]


def run(name: str) -> str:
    return f"mini-kubelet run examples/scenarios/playbook/{name}.yaml"


CASES = [
    Case("evicted", run("evicted"), run("evicted-request-covers-usage"),
         ("pods", 2, "manifest", "spec", "containers", 0, "resources", "requests", "memory"), "memory **request**",
         evictions, [("shop/report", 250)], [("shop/worker", 250)],
         ("The node was low on resource: memory. Threshold quantity: 100Mi, available: 96Mi. Container report was "
          "using 1800Mi, request is 256Mi, has larger consumption of memory.", "1544Mi", "188Mi", "1896Mi",
          "memory.available<100Mi")),
    Case("oomkilled", run("oom-limit"), run("oom-limit-raised"),
         ("pods", 0, "manifest", "spec", "containers", 0, "resources", "limits", "memory"), "memory **limit**",
         over_limit_notes, [(240, "media/thumbnailer")], [],
         ("OOMKilled", "Back-off restarting failed container resize in pod thumbnailer_media(thumbnailer)"),
         shown=run("oom-killed")),
    Case("out-of-resources",
         f"mini-kubelet admit examples/playbook/out-of-memory.yaml {ADMIT_ON}",
         f"mini-kubelet admit examples/playbook/out-of-memory-request-1gi.yaml {ADMIT_ON}",
         ("spec", "containers", 0, "resources", "requests", "memory"), "**request**",
         verdict, [(False, "OutOfmemory")], [(True, None)],
         ("Pod was rejected: Node didn't have enough resource: memory, requested: 2147483648, used: 2017460224, "
          "capacity: 3405520896", "OutOfcpu", "3405520896", "2017460224")),
    Case("crashloopbackoff", run("crash-loop"), run("crash-loop-restart-never"),
         ("pods", 0, "manifest", "spec", "restartPolicy"), "**`restartPolicy`**",
         last_status, ("Running", "CrashLoopBackOff", 5), ("Failed", "Error", 0),
         ("back-off 2m40s restarting failed container=app pod=checkout_shop(checkout)",
          "Back-off restarting failed container app in pod checkout_shop(checkout)", "CrashLoopBackOff")),
    Case("cpu-throttling", "mini-kubelet explain examples/playbook/cpu-throttled.yaml",
         "mini-kubelet explain examples/playbook/cpu-throttled-no-limit.yaml",
         ("spec", "containers", 0, "resources", "limits", "cpu"), "CPU **limit**",
         container_cpu_max, [("pod", "50000 100000"), ("container", "50000 100000")], [("container", "max 100000")],
         ("50000 100000", "max 100000")),
    Case("pending-pressure-taints", "mini-kubelet run examples/scenarios/memory-hard.yaml",
         run("memory-hard-transition-1m"), ("node", "kubelet", "evictionPressureTransitionPeriod"),
         "**`evictionPressureTransitionPeriod`**",
         condition_and_admissions,
         ([("MemoryPressure", 290, 590)], [("shop/best-effort-job", False), ("shop/burstable-job", True)]),
         ([("MemoryPressure", 290, 350)], [("shop/best-effort-job", True), ("shop/burstable-job", True)]),
         ("The node had condition: [MemoryPressure].", "4m50s", "9m50s", "5m50s", "5m20s")),
    Case("pending-pressure-taints",
         f"mini-kubelet admit examples/playbook/best-effort-under-pressure.yaml {UNDER_PRESSURE}",
         f"mini-kubelet admit examples/playbook/best-effort-under-pressure-toleration.yaml {UNDER_PRESSURE}",
         ("spec", "tolerations"), "**toleration**",
         verdict, [(False, "Evicted")], [(True, None)],
         ("Pod was rejected: The node had condition: [MemoryPressure].",)),
    Case("static-pod", run("static-pod"), run("static-pod-from-api"), ("pods", 0, "source"),
         "**where the manifest comes from**",
         mirror_and_kills, ("Running", []), ("Terminating", [("log-shipper", 30)]),
         ("log-shipper-node-1", "Stopping container shipper")),
    Case("stuck-terminating", run("terminating"), run("terminating-grace-30s"),
         ("pods", 0, "manifest", "spec", "terminationGracePeriodSeconds"), "**`terminationGracePeriodSeconds`**",
         killed_with, [("ledger", 3600)], [("ledger", 30)],
         ("Stopping container ledger", "grace period 3600s", "Terminating")),
    Case("besteffort-not-first", "mini-kubelet run examples/scenarios/besteffort-not-first.yaml",
         run("besteffort-not-first-hog-priority"), ("pods", 1, "manifest", "spec", "priority"), "**priority**",
         evictions, [("default/hog", 130)], [("default/sleepy", 130), ("default/hog", 160)],
         ("2m10s", "2m40s")),
]
CASES.append(Case(
    "resize-stuck", run("resize-deferred"), run("resize-deferred-batch-request-1"),
    ("pods", 1, "manifest", "spec", "containers", 0, "resources", "requests", "cpu"), "`batch` requests 1 CPU",
    resize_conditions, [(10, "api", "PodResizePending", "True", "Deferred")],
    [(10, "api", "PodResizeInProgress", "True", ""), (11, "api", "PodResizeInProgress", "removed", "")],
    ("Node didn't have enough resource: cpu, requested: 2000, used: 2500, capacity: 4000", "ResizeDeferred")))
IDS = [f"{c.page}:{c.changed[-1]}" for c in CASES]


def flat(text: str) -> str:
    """Text with every run of white space one space, so that wrapped lines compare with unwrapped ones."""
    return re.sub(r"\s+", " ", text)


def page_markers(page: str) -> list[str]:
    return [command for _, command in ANY_COMMAND_MARKER.findall((PLAYBOOK / f"{page}.md").read_text())]


def input_file(command: str) -> str:
    """The scenario or Pod a marker's command reads (its first argument after the command's name)."""
    return shlex.split(command)[2]


def differences(a: Any, b: Any, path: tuple = ()) -> list[tuple]:
    """Every path at which two decoded documents differ: a key only one of them has is a difference, and a
    mapping one of them leaves out counts as empty (a kubelet: block left out is every setting's default)."""
    if isinstance(a, dict) or isinstance(b, dict):
        a, b = ({} if a is None else a), ({} if b is None else b)
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for key in sorted(set(a) | set(b), key=str) if not (not path and key in IGNORED)
                for d in differences(a.get(key), b.get(key), path + (key,))]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, path + (i,))]
    return [] if a == b else [path]


@functools.cache
def outputs() -> dict[str, dict]:
    """Every playbook page's commands, as text and as --output json, run in one batch as the site build does."""
    commands = sorted({m for page in PLAYBOOK.glob("*.md") for m in page_markers(page.stem)})
    commands += [f"{c} --output json" for c in commands]
    return dict(zip(commands, run_commands(commands, ROOT)))


def as_json(command: str) -> dict:
    return json.loads(outputs()[f"{command} --output json"]["stdout"])


def test_every_symptom_has_its_page_and_every_page_its_case():
    pages = sorted(p.stem for p in PLAYBOOK.glob("*.md"))
    assert pages == sorted({c.page for c in CASES}) and len(pages) == 10


def test_every_playbook_file_is_used_by_a_page():
    used = {input_file(c) for page in PLAYBOOK.glob("*.md") for c in page_markers(page.stem)}
    for path in SCENARIOS + MANIFESTS:
        assert path.relative_to(ROOT).as_posix() in used, path.name


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_playbook_scenario_meets_its_expect_block(path, capsys):
    doc = yaml.safe_load(path.read_text())
    timeline = run_lifecycle(path) if is_lifecycle(doc) else run_scenario(path)
    checked, failures = (check_lifecycle_expect if is_lifecycle(doc) else check_expect)(timeline)
    assert timeline.scenario.expect and timeline.scenario.description
    assert checked >= 2 and failures == []
    assert main(["run", str(path)]) == 0
    assert f"expect: all {checked} checks passed" in capsys.readouterr().out


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_page_shows_the_symptom_and_the_fix(case):
    markers = page_markers(case.page)
    shown = case.shown or case.symptom
    assert {shown, case.symptom, case.fix} <= set(markers)
    text = (PLAYBOOK / f"{case.page}.md").read_text()
    for heading in ("## What you see", "## Why", "## What changes the outcome", "On your own cluster"):
        assert heading in text, heading
    assert text.index("## What you see") < text.index(shown) < text.index("## Why")
    assert text.index(case.symptom) < text.index(case.fix) and text.index(case.fix) > text.index("## What changes")
    assert case.setting in text  # the page names the one setting the fix changes
    assert '!!! warning "Misconception: ' in text


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_fix_differs_from_the_symptom_in_the_named_setting_alone(case):
    symptom, fix = shlex.split(case.symptom), shlex.split(case.fix)
    assert [w for i, w in enumerate(symptom) if i != 2] == [w for i, w in enumerate(fix) if i != 2]  # same options
    before, after = (yaml.safe_load((ROOT / input_file(c)).read_text()) for c in (case.symptom, case.fix))
    assert differences(before, after) == [case.changed]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_outcome_changes(case):
    symptom, fix = case.outcome(as_json(case.symptom)), case.outcome(as_json(case.fix))
    assert (symptom, fix) == (case.symptom_outcome, case.fix_outcome)
    assert symptom != fix


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_what_the_page_quotes_is_what_the_commands_print(case):
    text = flat((PLAYBOOK / f"{case.page}.md").read_text())
    markers = page_markers(case.page)
    printed = flat(" ".join(outputs()[m]["stdout"] + outputs()[f"{m} --output json"]["stdout"] for m in markers))
    for quote in case.quotes:
        assert flat(quote) in text, f"{case.page}.md does not quote {quote!r}"
        assert flat(quote) in printed, f"no command on {case.page}.md prints {quote!r}"


def test_the_chapter_is_in_the_nav_after_chapter_4_with_every_playbook_page():
    nav = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)["nav"]  # BaseLoader: no !!python tags
    titles = [next(iter(item)) for item in nav if isinstance(item, dict)]
    section = "5 · Capstone: a day on one node"
    assert titles.index(section) == titles.index("4 · Eviction under node pressure") + 1
    entries = next(item[section] for item in nav if isinstance(item, dict) and section in item)
    assert entries[0] == "chapter-5/index.md"
    playbook = next(e["Playbook"] for e in entries if isinstance(e, dict) and "Playbook" in e)
    listed = [next(iter(e.values())) for e in playbook]
    assert sorted(listed) == sorted(f"chapter-5/playbook/{p.name}" for p in PLAYBOOK.glob("*.md"))
    index = (DOCS / "chapter-5" / "index.md").read_text()
    for page in listed:  # the chapter's opening page lists every playbook page
        assert f"]({page.removeprefix('chapter-5/')})" in index, page


def test_exceeded_grace_period_only_for_a_pod_still_stopping_after_the_wait():
    """Evicted: killPodNow waits max(10 s, 1.5 x the override); the warning comes only if the Pod has not stopped."""
    command = next(m for m in page_markers("evicted") if m.endswith("playbook/evicted.yaml"))
    report = as_json(command)
    warned = {h["time"] for h in report["happenings"] if "ExceededGracePeriod" in h["text"]}
    (eviction,) = [e for step in report["steps"] for e in step["evictions"]]
    wait = max(10, eviction["grace_period_override"] * 3 // 2)
    assert eviction["stops_at"] - eviction["time"] > wait, "the page's replay shows a Pod still stopping"
    assert warned == {eviction["time"] + wait}
    assert "if the Pod is still stopping then" in flat((PLAYBOOK / "evicted.md").read_text())


def test_the_home_page_sends_a_reader_with_a_symptom_to_every_playbook_page_and_the_nav_keeps_it_open():
    """docs/index.md's "Have a symptom? Start here" links the playbook's table and each page; mkdocs.yml's
    extra.nav_expanded names the playbook's folder, so its section is open in the sidebar of every page."""
    home = (DOCS / "index.md").read_text()
    entry = home.split('!!! tip "Have a symptom? Start here"', 1)[1].split("\n!!! ", 1)[0]
    assert "](chapter-5/index.md#the-playbook)" in entry
    for page in sorted(PLAYBOOK.glob("*.md")):
        assert f"](chapter-5/playbook/{page.name})" in entry, page.name
    assert home.index("Have a symptom?") < home.index("## Who it is for")  # before the reader scrolls
    extra = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)["extra"]
    assert "chapter-5/playbook/" in extra["nav_expanded"]
