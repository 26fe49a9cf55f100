"""The scenario formats' field tables (mini_kubelet/sim/fields.py): what the readers check a file against, and
what the reference page (docs/reference/scenarios.md) shows, so that the page cannot differ from the readers."""

from __future__ import annotations

import copy
import functools
import random
import re
from pathlib import Path

import pytest
import yaml

from mini_kubelet import api, features
from mini_kubelet.sim import fields
from mini_kubelet.sim.lifecycle.scenario import load_lifecycle_scenario
from mini_kubelet.sim.node.scenario import load_node_scenario
from mini_kubelet.sim.reader import scenario_profile
from mini_kubelet.sim.eviction.scenario import load_scenario

from .conftest import DOCS, EXAMPLES

pytestmark = pytest.mark.ch4

SCENARIOS = sorted((EXAMPLES / "scenarios").rglob("*.yaml"))
LOAD = {"eviction": lambda doc, base: load_scenario(doc, name="s", where="s.yaml", base=base),
        "lifecycle": lambda doc, base: load_lifecycle_scenario(doc, "s.yaml", base, "s"),
        "node": lambda doc, base: load_node_scenario(doc, "s.yaml", base, "s")}


def kind_of(doc) -> str:
    return doc.get("replay", "eviction") if isinstance(doc, dict) else "eviction"


def places(doc, path: str):
    """Each mapping of a decoded scenario that a table path names, with its path as the reader's messages write it."""
    found = [("", doc)]
    for part in filter(None, path.split(".")):
        key, each = part.removesuffix("[]"), part.endswith("[]")
        step = []
        for where, value in found:
            if not isinstance(value, dict):
                continue
            if part.isupper():  # NAME, CONTAINER: every value of the mapping
                step += [(f"{where}.{k}", v) for k, v in value.items()]
            elif key in value:
                inner, at = value[key], f"{where}.{key}" if where else key
                step += [(f"{at}[{i}]", v) for i, v in enumerate(inner or [])] if each else [(at, inner)]
        found = step
    return [(where, value) for where, value in found if isinstance(value, dict)]


def readable_examples():
    for path in SCENARIOS:
        doc = yaml.safe_load(path.read_text())
        if not isinstance(doc, dict) or "invalid" in path.name:
            continue
        release = (scenario_profile(copy.deepcopy(doc), str(path)) or (features.REFERENCE_RELEASE, {}))[0]
        doc.pop("kubernetesVersion", None), doc.pop("featureGates", None)
        yield path, doc, release


def test_a_field_no_table_lists_is_refused_with_the_tables_fields_at_every_path_the_examples_use():
    """Into the first mapping of each table path an example scenario has, one unknown field: the reader names the
    path and allows exactly the table's fields, in its order."""
    covered = {kind: set() for kind in fields.FORMATS}
    for path, doc, release in readable_examples():
        kind = kind_of(doc)
        for table_path in fields.table(kind):
            if table_path in covered[kind]:
                continue
            for where, _ in places(doc, table_path)[:1]:
                broken = copy.deepcopy(doc)
                target = dict(places(broken, table_path))[where]
                target["bogusField"] = 1
                with features.release_profile(release), pytest.raises(api.ManifestError) as err:
                    LOAD[kind](broken, path.parent)
                allowed = fields.names(kind, table_path)
                if kind == "eviction" and table_path == "node.kubelet" and release < "1.33":
                    allowed = tuple(n for n in allowed if n != fields.MERGE.name)  # a config field from 1.33
                assert (err.value.path, err.value.problem) == (
                    f"{where}.bogusField" if where else "bogusField",
                    f"unknown field (expected one of: {', '.join(allowed)})"), (path.name, table_path)
                covered[kind].add(table_path)
    missing = {kind: sorted(set(fields.table(kind)) - covered[kind]) for kind in fields.FORMATS}
    assert sum(len(fields.table(k)) for k in fields.FORMATS) - sum(map(len, missing.values())) >= 46, missing  # 51 paths


@pytest.mark.parametrize("kind, doc, read", [
    ("lifecycle", {"replay": "lifecycle", "pods": [{"manifest": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
                                                                "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}]},
     lambda s: {("", "duration"): s.duration, ("pods[]", "at"): s.pods[0].at, ("pods[]", "source"): s.pods[0].source}),
    ("eviction", {"node": {"capacity": {"memory": "4Gi", "nodefs": "100Gi", "inodes": "1M", "maxpid": "4194304"}}},
     lambda s: {("", "duration"): s.duration, ("node", "name"): s.node_name,
                ("node.kubelet", "evictionPressureTransitionPeriod"): s.kubelet["evictionPressureTransitionPeriod"],
                ("node.kubelet", "evictionMaxPodGracePeriod"): s.kubelet["evictionMaxPodGracePeriod"],
                ("node.kubelet", "enforceNodeAllocatable"): s.kubelet["enforceNodeAllocatable"]}),
    ("node", {"replay": "node", "node": {"capacity": {"memory": "4Gi", "cpu": "2", "nodefs": "100Gi", "inodes": "1M",
                                                      "maxpid": "4194304"}}},
     lambda s: {("", "duration"): s.duration, ("node", "name"): s.node_name, ("node.kubelet", "maxPods"): s.kubelet["maxPods"],
                ("node.kubelet", "imageGCHighThresholdPercent"): s.kubelet["imageGCHighThresholdPercent"],
                ("node.kubelet", "imageGCLowThresholdPercent"): s.kubelet["imageGCLowThresholdPercent"]}),
])
def test_a_field_left_out_takes_the_tables_default(kind, doc, read):
    from mini_kubelet.sim.series import format_duration, parse_duration

    got = read(LOAD[kind](doc, Path(".")))
    for (path, name), value in got.items():
        want = fields.default(kind, path, name)
        if fields.field(kind, path, name).type == fields.DURATION:
            want = parse_duration(want) if isinstance(want, str) else want
            value = parse_duration(value) if isinstance(value, str) else value
        assert value == want, (kind, path, name, format_duration(value) if isinstance(value, int) else value)


def test_the_reference_page_shows_every_format_and_the_tables_name_every_field():
    page = (DOCS / "reference" / "scenarios.md").read_text()
    assert re.findall(r"^<!-- fields: (\w+) -->$", page, re.M) == ["lifecycle", "eviction", "node"]
    for kind in fields.FORMATS:
        text = fields.markdown(kind)
        for path, rows in fields.table(kind).items():
            assert f"**`{path or '(the file)'}`**" in text
            for f in rows:
                assert f"| `{f.name}` | {f.type} |" in text and f.type and f.doc is not None
        assert "| `kubernetesVersion` | string | `1.27` |" in text  # the release, in every format


def test_run_help_names_the_reference_page(capsys):
    from mini_kubelet.cmd.main import SCENARIO_REFERENCE, main

    with pytest.raises(SystemExit):
        main(["run", "--help"])
    assert " ".join(capsys.readouterr().out.split()).endswith(" ".join(f"{SCENARIO_REFERENCE}.".split()))
    page, source = re.fullmatch(r"(\S+)/ on the course's site \((\S+) in its repository\)", SCENARIO_REFERENCE).groups()
    assert source == f"docs/{page}.md" and (DOCS.parent / source).is_file()
    nav = yaml.load((DOCS.parent / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)["nav"]
    assert f"{page}.md" in str(nav)


def test_the_kubelet_defaults_of_the_tables_are_the_eviction_managers():
    """A scenario that leaves out the transition period or the max pod grace gets the eviction manager's defaults."""
    from mini_kubelet.eviction import manager
    from mini_kubelet.sim.series import format_duration

    table = {f.name: f.default for f in fields.KUBELET}
    period = int(manager.DEFAULT_EVICTION_PRESSURE_TRANSITION_PERIOD.total_seconds())
    assert table["evictionPressureTransitionPeriod"] == format_duration(period)
    assert table["evictionMaxPodGracePeriod"] == manager.DEFAULT_EVICTION_MAX_POD_GRACE_PERIOD


BAD_VALUES = ("bogus", -1, "1q", "-5m", 10**30, True, "", [], ["a"], {"x": 1})


def refusal(read) -> str | None:
    """The line a reader refuses a scenario with, or None."""
    try:
        read()
    except api.ManifestError as err:
        return str(err)
    return None


def changed(doc, rng):
    """The scenario with one change: a value replaced, a field left out, or a field no table has."""
    paths, stack = [], [((), doc)]
    while stack:
        path, value = stack.pop()
        paths.append(path)
        items = value.items() if isinstance(value, dict) else enumerate(value[:2]) if isinstance(value, list) else ()
        stack += [(path + (key,), inner) for key, inner in items]
    for path in rng.sample(paths[1:], min(12, len(paths) - 1)):
        for how in rng.sample(BAD_VALUES, 4) + ["left out", "unknown field"]:
            broken = copy.deepcopy(doc)
            parent = functools.reduce(lambda value, key: value[key], path[:-1], broken)
            if how == "left out" and isinstance(parent, dict):
                del parent[path[-1]]
            elif how == "unknown field" and isinstance(parent[path[-1]], dict):
                parent[path[-1]]["bogusField"] = 1
            elif how not in ("left out", "unknown field"):
                parent[path[-1]] = copy.deepcopy(how)
            else:
                continue
            yield ".".join(map(str, path)), how, broken


def test_the_check_before_the_client_refuses_only_what_the_reader_refuses_and_in_its_words():
    """`mini-kubelet run` checks a scenario's fields from the tables before any reader loads the client
    (sim/check.py). On every example, and on each example with one field changed (a seeded sample: a bad
    value, a field left out, an unknown field), whatever the check refuses the reader refuses with the same line."""
    from mini_kubelet.cmd.run import refuses_to_start
    from mini_kubelet.sim.check import check_fields

    rng, refused, compared = random.Random(1227), 0, 0
    for path, doc, release in readable_examples():
        kind = kind_of(doc)
        with features.release_profile(release):
            refuses_to_start(doc, str(path))  # takes out cgroupVersion and failCgroupV1, as run does first
            assert refusal(lambda: check_fields(copy.deepcopy(doc), kind, "s.yaml", path.parent)) is None, path.name
            for where, how, broken in changed(doc, rng):
                said = refusal(lambda: check_fields(copy.deepcopy(broken), kind, "s.yaml", path.parent))
                compared += 1
                if said is not None:
                    refused += 1
                    assert said == refusal(lambda: LOAD[kind](copy.deepcopy(broken), path.parent)), (path.name, where, how)
    assert compared > 1500 and refused > compared // 3, (compared, refused)
