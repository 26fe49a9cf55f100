"""Numbers a page writes must come from the package: those about a run's output must be in that output, and every
default, period, limit, score and message a page states must be the package's constant, so neither can drift.

The output itself is produced at build time by the page's `<!-- run: ... -->` marker; the first tests tie the
prose around it to the same command. The table DEFAULTS, below them, finds every statement of a default.
"""

from __future__ import annotations

import re
from datetime import timedelta as _td

import pytest

from mini_kubelet import flowcontrol, pleg, pod_worker_types as pw, qos, sync_loop
from mini_kubelet.clock import EVICTION_MONITORING_PERIOD
from mini_kubelet.cm import helpers as cm
from mini_kubelet.cmd.main import main
from mini_kubelet.cmd.run_node_report import EVENT_TTL
from mini_kubelet.config.file import FILE_CHECK_FREQUENCY
from mini_kubelet.cri import OOM_KILLED_EXIT_CODE
from mini_kubelet.eviction import manager as eviction_manager, messages
from mini_kubelet.eviction.api import DEFAULT_EVICTION_HARD
from mini_kubelet.eviction.images import IMAGE_MINIMUM_GC_AGE
from mini_kubelet.eviction.records import DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS
from mini_kubelet.pod_workers import KILL_POD_NOW_MIN_TIMEOUT
from mini_kubelet.sim.node.events import NODE_STATUS_UPDATE_PERIOD
from mini_kubelet.sim.node.scenario import MAX_PODS_DEFAULT
from mini_kubelet.sim.node.usage import CONTAINER_GC_PERIOD, IMAGE_GC_PERIOD

from .conftest import DOCS, LABS, ROOT

pytestmark = pytest.mark.ch4


def section(page: str, heading: str) -> str:
    text = (DOCS / page).read_text()
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else len(text)]


def run_output(capsys, *args: str) -> str:
    capsys.readouterr()
    assert main(list(args)) == 0
    return capsys.readouterr().out


def test_the_timeline_commentary_names_times_the_replay_prints(capsys):
    """synchronize.md, "A timeline": every time the bullets name (**3m6s, 3m12s:** ...) is a line of the replay."""
    prose = section("chapter-4/synchronize.md", "A timeline")
    marker = re.search(r"<!-- (?:run|releases): mini-kubelet (run \S+) -->", prose)
    out = run_output(capsys, *marker.group(1).split())
    printed = {line.split()[0] for line in out.splitlines() if re.match(r"  \d+(m|s)", line)}
    named = [t for bold in re.findall(r"^- \*\*([^*]+):\*\*", prose, re.M) for t in bold.split(", ")]
    named += re.findall(r"\bat (\d+m\d+s)\b", prose)  # "it stops at 5m38s", "refused at 6m10s"
    assert len(named) >= 8
    assert [t for t in named if t not in printed] == []


def test_the_timeline_commentary_names_the_victims_the_replay_evicts(capsys):
    """The soft eviction takes the ranking's first Pod at 3m; the hard one at 5m8s takes the Guaranteed Pod."""
    out = run_output(capsys, "run", "examples/scenarios/memory-soft.yaml")
    by_time, current = {}, None
    for line in out.splitlines():
        if re.match(r"  \d+(m|s)", line):
            current = line.split()[0]
        match = re.match(r"\s+evicted default/(\S+):", line)
        if match:
            by_time[current] = match.group(1)
    assert by_time["3m"] == "best-effort-low-priority-low-usage"
    assert by_time["5m8s"].startswith("guaranteed-")
    prose = section("chapter-4/synchronize.md", "A timeline")
    assert "**3m:**" in prose and "**5m8s:**" in prose and "the **Guaranteed** Pod" in prose


# --- every default a page states is the package's constant ---------------------------------------------------------
#
# One table: the constant, its value as the package has it, and patterns that find the sentences stating it on the
# pages (docs/, the README and the labs' sources). A pattern captures whatever number the sentence gives, so a page
# that says another number fails; a pattern that finds nothing fails too, so the table cannot go stale quietly.

WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "five": 5, "ten": 10, "fifteen": 15, "twenty": 20,
         "thirty": 30, "sixty": 60}
UNITS = {"µs": 1e-6, "ms": 1e-3, "s": 1, "sec": 1, "second": 1, "seconds": 1, "m": 60, "min": 60, "minute": 60,
         "minutes": 60, "h": 3600, "hour": 3600, "hours": 3600}
NUMBER = r"(?:\d+(?:\.\d+)?|" + "|".join(WORDS) + r")"
# A duration as the pages write it: 10 s, 10s, 2-second, three minutes, 5m, 1m30s, 100 ms, "second" alone.
D = (r"(?P<{}>" + NUMBER + r"[ -]?(?:µs|ms|seconds?|sec|minutes?|min|hours?|[smh])\b(?:\d+s)?|second\b|minute\b|hour\b)")


def duration(text: str) -> float:
    """Seconds, from a duration as a page writes it."""
    text = text.strip().replace("\u2212", "-")
    if text in ("second", "minute", "hour"):
        return UNITS[text]
    if re.fullmatch(r"\d+", text) or text in WORDS:
        return float(WORDS.get(text, text))  # a bare number of seconds
    parts = re.findall(r"(" + NUMBER + r")[ -]?(µs|ms|seconds?|sec|minutes?|min|hours?|[smh])", text)
    assert parts, text
    return sum((float(WORDS.get(n, n) if n in WORDS else n)) * UNITS[u] for n, u in parts)


def number(text: str) -> int:
    return int(text.replace("\u2212", "-"))


def seconds(value) -> float:
    return value.total_seconds() if isinstance(value, _td) else float(value)


def template(fmt: str):
    """A message template as a pattern: its placeholders stand for any value, <name>, [a list] or an ellipsis; a
    statement agrees if it starts with the template (the messages are concatenated)."""
    return re.compile(re.escape(fmt.rstrip()).replace(r"\{\}", r"(?:\[[^\]]*\]|[^\s`']+|<[^>]+>|…)") + r"\s*")


def fill(pattern: str) -> str:
    """{v}, {w}: durations named v and w."""
    return pattern.replace("{v}", D.format("v")).replace("{w}", D.format("w"))


BACK_OFF_JITTERED = (pw.BACK_OFF_PERIOD, pw.BACK_OFF_PERIOD * (1 + pw.WORKER_BACK_OFF_PERIOD_JITTER_FACTOR))
OOM_BURSTABLE = (1000 + qos.GUARANTEED_OOM_SCORE_ADJ, qos.BESTEFFORT_OOM_SCORE_ADJ - 1)  # policy.go's clamps: 3, 999

# (constant, value, kind, patterns): kind "duration" compares seconds, "number" integers, "text" the text itself,
# "template" a message template; each pattern's named groups, in order, are the value (a tuple for several).
DEFAULTS = [
    ("sync_loop.SYNC_PERIOD", seconds(sync_loop.SYNC_PERIOD), "duration", [
        r"a {v} sync ticker", r"the {v} sync tick,", r"PLEG, a {v} tick, housekeeping"]),
    ("sync_loop.HOUSEKEEPING_PERIOD", seconds(sync_loop.HOUSEKEEPING_PERIOD), "duration", [
        r"and a {v} housekeeping ticker", r"the {v} housekeeping tick", r"`housekeepingCh` \| the {v} tick",
        r"housekeepingCh<br/>every {v}", r"housekeeping \| the {v} tick", r"housekeeping runs every {v}"]),
    ("sync_loop.SYNC_LOOP_BACK_OFF_BASE, _MAX",
     (seconds(sync_loop.SYNC_LOOP_BACK_OFF_BASE), seconds(sync_loop.SYNC_LOOP_BACK_OFF_MAX)), "duration", [
        r"{v}, doubles, and stops growing at {w} \(it is reset", r"The {v} to {w} back-off above is the \*\*sync loop's"]),
    ("pod_worker_types.RESYNC_INTERVAL (syncFrequency)", pw.RESYNC_INTERVAL, "duration", [
        r"\(`syncFrequency`, (?P<v>one minute) by default\)", r"each pod worker resyncs every {v}",
        r"resync every Pod about once a {v}", r"requeue \(every {v} or so after a good", r"the (?P<v>minute) resync of a quiet Pod",
        r"in about a {v} after a good\s+sync"]),
    ("pod_worker_types.BACK_OFF_PERIOD, plus WORKER_BACK_OFF_PERIOD_JITTER_FACTOR", BACK_OFF_JITTERED, "duration", [
        r"every (?P<v>ten) to (?P<w>fifteen) seconds"]),
    ("pod_worker_types.BACK_OFF_PERIOD", pw.BACK_OFF_PERIOD, "duration", [
        r"failed otherwise \| the back-off period, {v}, plus up to half", r"in about {v} after a failed one",
        r"\(the {v} back-off period plus up to half of it\)", r"\({v} in the replay, which takes the jitter's lower bound\)"]),
    ("pod_worker_types.BACK_OFF_ON_TRANSIENT_ERROR_PERIOD", pw.BACK_OFF_ON_TRANSIENT_ERROR_PERIOD, "duration", [
        r"\"network is not ready\" \| {v}, plus up to half", r"\({v} if the network is not ready\)"]),
    ("pleg.GENERIC_PLEG_RELIST_PERIOD", seconds(pleg.GENERIC_PLEG_RELIST_PERIOD), "duration", [
        r"lists the (?:whole )?runtime every {v}", r"relist every {v}", r"the PLEG relists every\s+{v}",
        r"the next {v} relist", r"relists in its own goroutine every {v}", r"PLEG relists every {v} only"]),
    ("pleg.GENERIC_PLEG_RELIST_THRESHOLD", seconds(pleg.GENERIC_PLEG_RELIST_THRESHOLD), "duration", [
        r"no relist succeeds for {v}", r"has not relisted for {v}"]),
    ("flowcontrol.BACK_OFF_PERIOD", seconds(flowcontrol.BACK_OFF_PERIOD), "duration", [
        r"delay that starts\s+at {v}, doubles", r"then after {v}, doubling", r"\bthen {v},\s+doubling to a cap", r"are {v}, doubling to",
        r"{v} and 300 s are constants", r"back-off starts at {v} and doubles",
        r"\| 2nd \| {v} \|", r"restart, then {v}, 20 s, 40 s", r"finished: {v}, doubled after each"]),
    ("flowcontrol.MAX_CONTAINER_BACK_OFF", seconds(flowcontrol.MAX_CONTAINER_BACK_OFF), "duration", [
        r"stops\s+growing at {v} \(`backOffPeriod`", r"doubling to a cap of {v}", r"doubling to {v}, fixed in v1\.27",
        r"10 s and {v} are constants", r"up to {v}\. While it holds", r"doubling up to {v}\.", r"and {v} \(five minutes\) for every restart",
        r"40 s… up to {v}\.", r"capped at {v} \(`backOffPeriod`", r"\| 7th and every one after \| {v} \|",
        r"default is {v}, so \[the chapter's crash loop\]"]),
    ("2 × flowcontrol.MAX_CONTAINER_BACK_OFF (the v1.27 reset)", 2 * seconds(flowcontrol.MAX_CONTAINER_BACK_OFF), "duration", [
        r"a container that ran for more than {v} before it exited", r"{v} of running, or a new spec", r"Exactly {v} is not enough",
        r"exactly {v} is not expired", r"the instance finished \*more than\* {v}", r"cap \({v}\) after the delay"]),
    ("clock.EVICTION_MONITORING_PERIOD", seconds(EVICTION_MONITORING_PERIOD), "duration", [
        r"[Ee]very {v} the (?:eviction )?manager", r"made every {v} by its eviction manager", r"still runs every {v}, reads",
        r"eviction manager passes every {v}", r"a pass every {v}", r"run every {v} in the eviction manager's",
        r"the loop's period \| {v} \(`evictionMonitoringPeriod`", r"called every {v}\. It", r"eviction manager every {v}",
        r"synchronize pass every {v}", r"at the next pass \(every {v};"]),
    ("eviction.api.DEFAULT_EVICTION_HARD", tuple(DEFAULT_EVICTION_HARD.values()), "text", [
        r"`memory\.available<(?P<a>[^`]+)`, `nodefs\.available<(?P<b>[^`]+)`, `nodefs\.inodesFree<(?P<c>[^`]+)`,?\s+(?:and\s+)?"
        r"`imagefs\.available<(?P<d>[^`]+)`"]),
    ("eviction.manager.DEFAULT_EVICTION_PRESSURE_TRANSITION_PERIOD",
     seconds(eviction_manager.DEFAULT_EVICTION_PRESSURE_TRANSITION_PERIOD), "duration", [
        r"\| `evictionPressureTransitionPeriod` \| `{v}` \|", r"\| a duration \| `{v}` \|", r"\(\*\*{v}\*\* by default;",
        r"reported until {v} \(`evictionPressureTransitionPeriod`\)", r"`evictionPressureTransitionPeriod` \({v} by default\)",
        r"`evictionPressureTransitionPeriod` \({v}\) after", r"outlives the pressure by {v}", r"the default {v} transition period",
        r"`evictionPressureTransitionPeriod` \({v}\) ago"]),
    ("eviction.manager.DEFAULT_EVICTION_MAX_POD_GRACE_PERIOD", eviction_manager.DEFAULT_EVICTION_MAX_POD_GRACE_PERIOD, "number", [
        r"\| `evictionMaxPodGracePeriod` \| `(?P<v>\d+)` \|"]),
    ("eviction.records.DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS", DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS, "duration", [
        r"`terminationGracePeriodSeconds` \({v} by default\)", r"`terminationGracePeriodSeconds`, {v} by",
        r"itself defaulted to (?P<v>\d+) by the API",
        r"\((?P<v>\d+) when the manifest leaves it out\)"]),
    ("pod_workers.KILL_POD_NOW_MIN_TIMEOUT", KILL_POD_NOW_MIN_TIMEOUT, "duration", [
        r"`killPodNow` stops waiting after {v}", r"up to max\((?P<v>\d+), 1\.5 × override\) s", r"`killPodNow`'s {v}, so",
        r"killPodNow\]\] waits (?P<v>\d+) of them", r"waits max\((?P<v>\d+), 0 \+ 0/2\) s", r"1\.5 times the override, and at least {v}"]),
    ("qos.GUARANTEED_OOM_SCORE_ADJ", qos.GUARANTEED_OOM_SCORE_ADJ, "number", [
        r"(?P<v>[-−]\d+) Guaranteed, \d+ BestEffort", r"(?P<v>[-−]\d+) for (?:node-critical and )?Guaranteed",
        r"Guaranteed Pod's containers get \*\*(?P<v>[-−]\d+)\*\*", r"Guaranteed and node-critical<br/>(?P<v>[-−]\d+)",
        r"node-critical\*\* Pod gets \*\*(?P<v>[-−]\d+)\*\*", r"`oom_score_adj` between (?P<v>[-−]\d+) and \d+, so that when memory runs out",
        r"`oom_score_adj` is (?P<v>[-−]\d+) only if it is"]),
    ("qos.BESTEFFORT_OOM_SCORE_ADJ", qos.BESTEFFORT_OOM_SCORE_ADJ, "number", [
        r"[-−]\d+ Guaranteed, (?P<v>\d+) BestEffort", r"(?P<v>\d+) for BestEffort", r"BestEffort<br/>(?P<v>\d+)",
        r"`oom_score_adj` between [-−]\d+ and (?P<v>\d+), so that when memory runs out", r"a BestEffort Pod's get \*\*(?P<v>\d+)\*\*"]),
    ("1000 + qos.GUARANTEED_OOM_SCORE_ADJ, qos.BESTEFFORT_OOM_SCORE_ADJ - 1 (Burstable)", OOM_BURSTABLE, "number", [
        r"(?P<v>\d+) to (?P<w>\d+) (?:for )?Burstable", r"kept within (?P<v>\d+) and (?P<w>\d+)", r"never goes below (?P<v>\d+) or above (?P<w>\d+)",
        r"from its QoS class and memory request, with the clamps at (?P<v>\d+) and (?P<w>\d+)",
        r"a Burstable static Pod gets (?P<v>\d+) to (?P<w>\d+)"]),
    ("qos.KUBELET_OOM_SCORE_ADJ", qos.KUBELET_OOM_SCORE_ADJ, "number", [
        r"defaults to `KubeletOOMScoreAdj = (?P<v>[-−]\d+)`", r"The kubelet itself runs at (?P<v>[-−]\d+)",
        r"the kubelet process<br/>(?P<v>[-−]\d+)", r"\| the kubelet itself \| – \| – \| (?P<v>[-−]\d+) \|"]),
    ("qos.KUBE_PROXY_OOM_SCORE_ADJ", qos.KUBE_PROXY_OOM_SCORE_ADJ, "number", [
        r"the constant `KubeProxyOOMScoreAdj = (?P<v>[-−]\d+)`", r"lowers its own process to (?P<v>[-−]\d+)"]),
    ("cm.helpers.MIN_SHARES, MAX_SHARES", (cm.MIN_SHARES, cm.MAX_SHARES), "number", [
        r"CPU shares from a request, with the clamps at (?P<v>\d+) and (?P<w>\d+)", r"kept between \*\*(?P<v>\d+)\*\* and \*\*(?P<w>\d+)\*\*", r"(?P<v>\d+)…(?P<w>\d+) onto"]),
    ("cm.helpers.SHARES_PER_CPU", cm.SHARES_PER_CPU, "number", [
        r"gives (?P<v>\d+) shares per CPU", r"`shares = milliCPU × (?P<v>\d+) ÷ 1000`"]),
    ("cm.helpers.QUOTA_PERIOD", (cm.QUOTA_PERIOD * 1e-6,) * 2, "duration", [
        r"The \*\*period\*\* is {v}, \*\*{w}\*\*"]),
    ("eviction.messages.REASON", messages.REASON, "text", [
        r"reason `(?P<v>\w+)`, message `The node", r"with reason `(?P<v>\w+)` and the message `The node",
        r"`Failed`, reason `(?P<v>\w+)`, message `(?:Pod was rejected: )?The node", r"`(?P<v>\w+)` with `The node was low on resource"]),
    ("eviction.messages.NODE_LOW_MESSAGE_FMT", messages.NODE_LOW_MESSAGE_FMT, "template", [
        r"`(?P<v>The node was low on resource: [^`]*)`", r"'(?P<v>The node was low on resource: [^.']*\. )"]),
    ("eviction.messages.THRESHOLD_MET_MESSAGE_FMT", messages.THRESHOLD_MET_MESSAGE_FMT, "template", [
        r"`(?P<v>Threshold quantity: [^`]*)`", r"resource: \w+\. (?P<v>Threshold quantity: [^.']*\. )"]),
    ("eviction.messages.CONTAINER_MESSAGE_FMT", messages.CONTAINER_MESSAGE_FMT, "template", [
        r"`(?P<v>Container <name> was using [^`]*)`", r"^(?P<v>Container \w+ was using .*)$"]),
    ("eviction.messages.NODE_CONDITION_MESSAGE_FMT", messages.NODE_CONDITION_MESSAGE_FMT, "template", [
        r"`(?:Pod was rejected: )?(?P<v>The node had condition: [^`]*)`", r"^Pod was rejected: (?P<v>The node had condition: .*)$"]),
    ("config.file.FILE_CHECK_FREQUENCY", FILE_CHECK_FREQUENCY, "duration", [
        r"`fileCheckFrequency` \(default {v}\)", r"`fileCheckFrequency`, {v} by default"]),
    ("sim.node.events.NODE_STATUS_UPDATE_PERIOD (nodeStatusUpdateFrequency)", NODE_STATUS_UPDATE_PERIOD, "duration", [
        r"one node-status update \({v}\) after"]),
    ("sim.node.usage.CONTAINER_GC_PERIOD (kubelet.go ContainerGCPeriod)", CONTAINER_GC_PERIOD, "duration", [
        r"container GC (?:runs )?every {v}"]),
    ("sim.node.usage.IMAGE_GC_PERIOD (kubelet.go ImageGCPeriod)", IMAGE_GC_PERIOD, "duration", [
        r"image GC (?:runs )?every {v}", r"periodic image GC \(every {v}"]),
    ("eviction.images.IMAGE_MINIMUM_GC_AGE", seconds(IMAGE_MINIMUM_GC_AGE), "duration", [
        r"first seen at least {v} ago", r"a pulled image is kept for {v}"]),
    ("cmd.run_node_report.EVENT_TTL", EVENT_TTL, "duration", [
        r"only the last (?P<v>hour)'s, the API server's\s+default event TTL"]),
    ("sim.node.scenario.MAX_PODS_DEFAULT", MAX_PODS_DEFAULT, "number", [
        r"runs (?P<v>\d+) Pods, the default `maxPods`", r"`maxPods` \(default (?P<v>\d+)\)"]),
    ("cri.OOM_KILLED_EXIT_CODE", OOM_KILLED_EXIT_CODE, "number", [
        r"the container exits with (?P<v>\d+) and the runtime reports the reason `OOMKilled`"]),
]


READ = sorted(p for p in DOCS.rglob("*.md") if "assets" not in p.parts) + [ROOT / "README.md"] + sorted((LABS / "src").glob("*.py"))


def flat(path) -> str:
    """The file's text with its line breaks (and a lab's comment marks) folded into single spaces."""
    text = path.read_text()
    return re.sub(r"[ \t]*\n[ \t]*(?:# ?)?" if path.suffix == ".py" else r"[ \t]*\n[ \t]*", " ", text)


TEXTS = {path.relative_to(ROOT).as_posix(): (path.read_text(), flat(path)) for path in READ}


def statements(pattern: str) -> list[tuple[str, tuple[str, ...]]]:
    """Every (file, captured values) the pattern finds; a pattern anchored with ^ reads the lines as they are."""
    compiled = re.compile(fill(pattern), re.M)
    found = []
    for name, (raw, folded) in TEXTS.items():
        for match in compiled.finditer(raw if pattern.startswith("^") else folded):
            found.append((name, tuple(v for v in match.groups() if v is not None)))
    return found


def agrees(kind: str, value, stated: tuple[str, ...]) -> bool:
    expected = value if isinstance(value, tuple) else (value,)
    if kind == "template":
        text = stated[0].rstrip()
        return bool(template(value).match(text + " ")) or (text.endswith("…") and value.startswith(text[:-1].rstrip()))
    if len(stated) != len(expected):
        return False
    if kind == "duration":
        return all(abs(duration(s) - float(e)) < 1e-9 for s, e in zip(stated, expected))
    if kind == "number":
        return all(number(s) == int(e) for s, e in zip(stated, expected))
    return tuple(stated) == tuple(str(e) for e in expected)


@pytest.mark.parametrize("constant, value, kind, patterns", DEFAULTS, ids=[row[0].split(" ")[0] for row in DEFAULTS])
def test_every_page_states_the_packages_default(constant, value, kind, patterns):
    """Each pattern finds at least one statement, and every statement found gives the package's value."""
    unmatched, wrong = [], []
    for pattern in patterns:
        found = statements(pattern)
        if not found:
            unmatched.append(pattern)
        wrong += [(name, stated, pattern) for name, stated in found if not agrees(kind, value, stated)]
    assert not unmatched, f"{constant}: these patterns match no sentence on any page: {unmatched}"
    assert not wrong, f"{constant} is {value!r}, but: {wrong}"


def test_the_single_source_table_covers_the_pages():
    """The table checks at least 35 constants through at least 150 statements on the pages."""
    counted = sum(len(statements(p)) for _, _, _, patterns in DEFAULTS for p in patterns)
    assert len(DEFAULTS) >= 35 and counted >= 150, (len(DEFAULTS), counted)
