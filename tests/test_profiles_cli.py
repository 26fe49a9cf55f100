"""Chapter 0: every command answers for a release (--kubernetes-version) with gates set on top (--feature-gates).

The default is the course's reference, v1.27. A Node's status.nodeInfo.kubeletVersion chooses its release
for admit and explain, with a note; a scenario may name its release. Bad values: one line, exit 2.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from mini_kubelet import features
from mini_kubelet.cmd.main import main
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.ch0

POD = str(EXAMPLES / "pods" / "web.yaml")
NODE = str(EXAMPLES / "nodes" / "node.yaml")
FITS = str(EXAMPLES / "pods" / "lifecycle-web.yaml")  # bound to no node
NODE_136 = str(EXAMPLES / "cluster" / "node-v1.36.yaml")
SCENARIO = str(EXAMPLES / "scenarios" / "lifecycle-running.yaml")
COMMANDS = {
    "show": ["show", POD],
    "explain": ["explain", POD],
    "admit": ["admit", POD, "--node", NODE],
    "run": ["run", SCENARIO],
    "eviction rank": ["eviction", "rank", "--summary", str(EXAMPLES / "summary" / "memory-pressure.json"),
                      "--pods", str(EXAMPLES / "summary" / "memory-pods.yaml"), "--signal", "memory.available"],
}
JSON = ("explain", "admit", "run", "eviction rank")


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("flags, error", [
    (["--kubernetes-version", "1.26"], "mini-kubelet: --kubernetes-version: Kubernetes 1.26 is outside the releases "
                                       "the course models (1.27 to 1.36)\n"),
    (["--kubernetes-version", "v1.37.0"], "mini-kubelet: --kubernetes-version: Kubernetes 1.37 is outside the "
                                          "releases the course models (1.27 to 1.36)\n"),
    (["--kubernetes-version", "newest"], 'mini-kubelet: --kubernetes-version: "newest" is not a Kubernetes version '
                                         "(expected 1.36 or v1.36.3)\n"),
    (["--feature-gates", "NoSuchGate=true"], "mini-kubelet: --feature-gates: unrecognized feature gate: NoSuchGate\n"),
    (["--feature-gates", "SidecarContainers=true"], "mini-kubelet: --feature-gates: unrecognized feature gate: "
                                                    "SidecarContainers (not in Kubernetes 1.27)\n"),
    (["--kubernetes-version", "1.36", "--feature-gates", "SidecarContainers=false"],
     "mini-kubelet: --feature-gates: cannot set feature gate SidecarContainers to false, feature is locked to true "
     "(Kubernetes 1.36)\n"),
    (["--feature-gates", "EventedPLEG=maybe"], "mini-kubelet: --feature-gates: invalid value of EventedPLEG=maybe, "
                                               "err: strconv.ParseBool: parsing 'maybe': invalid syntax\n"),
])
def test_a_bad_release_or_gate_is_one_line_and_exit_2(capsys, command, flags, error):
    assert main(COMMANDS[command] + flags) == 2
    out, err = capsys.readouterr()
    assert (out, err) == ("", error)


@pytest.mark.parametrize("command", JSON)
def test_json_names_the_profile_and_the_gates_it_changed(capsys, command):
    assert main(COMMANDS[command] + ["--output", "json"]) in (0, 1)
    default = json.loads(capsys.readouterr().out)["profile"]
    assert default["kubernetesVersion"] == "1.27" and default["featureGates"] == {}
    assert default["source"] == ("node worker-1 kubeletVersion v1.27.7" if command == "admit" else "default")
    assert main(COMMANDS[command] + ["--output", "json", "--kubernetes-version", "v1.36.3",
                                     "--feature-gates", "PodLevelResources=false"]) in (0, 1)
    profile = json.loads(capsys.readouterr().out)["profile"]
    assert profile["kubernetesVersion"] == "1.36" and profile["source"] == "--kubernetes-version"
    gates = profile["featureGates"]
    assert gates["SidecarContainers"] is True and gates["InPlacePodVerticalScaling"] is True
    assert "PodLevelResources" not in gates, "off, as in v1.27 (where it does not exist)"
    assert features.DEFAULT_FEATURE_GATE.release == "1.27", "the command puts the reference profile back"


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_text_names_a_release_other_than_the_reference(capsys, command):
    main(COMMANDS[command])
    assert "Kubernetes 1." not in capsys.readouterr().out.splitlines()[0]
    main(COMMANDS[command] + ["--kubernetes-version", "1.36"])
    assert capsys.readouterr().out.splitlines()[0] == "Kubernetes 1.36 (--kubernetes-version)"


@pytest.mark.parametrize("command", [["explain", POD, "--node", NODE_136], ["admit", FITS, "--node", NODE_136]])
def test_a_nodes_kubelet_version_chooses_the_release(capsys, command):
    assert main(command + ["--output", "json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["profile"]["kubernetesVersion"] == "1.36"
    assert json.loads(out)["profile"]["source"] == "node worker-36 kubeletVersion v1.36.3"
    assert err == ("note: node worker-36 runs kubelet v1.36.3: answering for Kubernetes 1.36 "
                   "(--kubernetes-version chooses another)\n")
    assert main(command + ["--output", "json", "--kubernetes-version", "1.27"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["profile"] == {"kubernetesVersion": "1.27", "source": "--kubernetes-version",
                                          "featureGates": {}}
    assert err == "note: node worker-36 runs kubelet v1.36.3; answering for 1.27, as --kubernetes-version asks\n"


def test_a_node_newer_than_the_course_is_answered_by_the_nearest_release(tmp_path, capsys):
    node = tmp_path / "node.yaml"
    node.write_text(open(NODE_136).read().replace("v1.36.3", "v1.38.0"))
    assert main(["explain", POD, "--node", str(node), "--output", "json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["profile"]["kubernetesVersion"] == "1.36"
    assert "answering for Kubernetes 1.36, the nearest release the course models" in err


def test_a_scenario_names_its_release(tmp_path, capsys):
    text = open(SCENARIO).read()
    scenario = tmp_path / "sc.yaml"
    scenario.write_text("kubernetesVersion: v1.36.1\nfeatureGates: {PodLevelResources: false}\n" +
                        text.replace("../pods/", str(EXAMPLES / "pods") + "/"))
    assert main(["run", str(scenario), "--output", "json"]) in (0, 1)
    profile = json.loads(capsys.readouterr().out)["profile"]
    assert profile["kubernetesVersion"] == "1.36" and profile["source"] == f"scenario {scenario}"
    scenario.write_text('kubernetesVersion: "1.20"\n' + text)
    assert main(["run", str(scenario)]) == 2
    assert capsys.readouterr().err == (f"mini-kubelet: {scenario}: kubernetesVersion: Kubernetes 1.20 is outside the "
                                       "releases the course models (1.27 to 1.36)\n")
    scenario.write_text("kubernetesVersion: 1.30\n" + text)  # YAML reads a number
    assert main(["run", str(scenario)]) == 2
    assert capsys.readouterr().err == (f"mini-kubelet: {scenario}: kubernetesVersion: expected a string such as "
                                       '"1.36", got 1.3 (write it in quotes: YAML reads 1.30 as the number 1.3)\n')
    scenario.write_text("featureGates: {SidecarContainers: true}\n" + text)
    assert main(["run", str(scenario)]) == 2
    assert capsys.readouterr().err == (f"mini-kubelet: {scenario}: featureGates: unrecognized feature gate: "
                                       "SidecarContainers (not in Kubernetes 1.27)\n")


def test_a_bad_flag_is_refused_before_the_client_is_imported():
    """The flags are checked before any Kubernetes model is loaded: the one line comes at once."""
    code = ("import sys; from mini_kubelet.cmd.main import main; "
            "rc = main(['explain', 'missing.yaml', '--kubernetes-version', '9.9']); "
            "sys.exit(10 if 'kubernetes' in sys.modules else rc)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True).returncode == 2


def test_a_kubelet_on_cgroup_v1_refuses_to_start_from_1_35(tmp_path, capsys):
    """failCgroupV1 defaults to true from 1.35 (#134298): on cgroup v1 the kubelet does not start at all."""
    scenario = tmp_path / "v1.yaml"
    text = open(SCENARIO).read().replace("../pods/", str(EXAMPLES / "pods") + "/")
    assert "\nnode:" not in text
    scenario.write_text(text + "node: {cgroupVersion: 1}\n")
    assert main(["run", str(scenario), "--kubernetes-version", "1.35"]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"Kubernetes 1.35 (--kubernetes-version)\n{scenario}: the node is on cgroup v1 and "
                          "failCgroupV1 is true (its default from 1.35, #134298): the kubelet refuses to start")
    assert main(["run", str(scenario), "--kubernetes-version", "1.34"]) == 0
    assert "cgroup v1 is in maintenance mode from 1.31" in capsys.readouterr().err
    assert main(["run", str(scenario)]) == 0, "v1.27 runs on cgroup v1 as on v2"
    capsys.readouterr()
    scenario.write_text(text + "node: {cgroupVersion: 1, kubelet: {failCgroupV1: false}}\n")
    assert main(["run", str(scenario), "--kubernetes-version", "1.36"]) == 0
    assert main(["run", str(scenario)]) == 2
    assert capsys.readouterr().err.endswith(f"{scenario}: node.kubelet.failCgroupV1: not a setting of Kubernetes 1.27 "
                                            "(failCgroupV1 arrived in 1.31)\n")
    scenario.write_text(text + "node: {cgroupVersion: 3}\n")
    assert main(["run", str(scenario)]) == 2
    assert capsys.readouterr().err == f"mini-kubelet: {scenario}: node.cgroupVersion: expected 1 or 2, got 3\n"


def test_a_gate_waits_for_the_release_the_node_names(capsys):
    """--feature-gates PodLevelResources=false (not in v1.27) is fine on a Node that runs v1.36.3, refused otherwise."""
    assert main(["admit", FITS, "--node", NODE_136, "--output", "json", "--feature-gates", "PodLevelResources=false"]) == 0
    profile = json.loads(capsys.readouterr().out)["profile"]
    assert profile["kubernetesVersion"] == "1.36" and "PodLevelResources" not in profile["featureGates"]
    for command in (["admit", FITS, "--node", NODE], ["explain", POD]):
        assert main(command + ["--feature-gates", "PodLevelResources=false"]) == 2
        assert capsys.readouterr() == ("", "mini-kubelet: --feature-gates: unrecognized feature gate: PodLevelResources "
                                           "(not in Kubernetes 1.27)\n")
