package main

// getPhase and computePodActions, reached through shims in their own packages (_shims/pkg/kubelet and
// _shims/pkg/kubelet/kuberuntime), and HashContainer, exported.

import (
	"encoding/json"
	"flag"
	"io"
	"reflect"
	"time"

	jsonserve "upstream-jsonserve"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet"
	kubecontainer "k8s.io/kubernetes/pkg/kubelet/container"
	"k8s.io/kubernetes/pkg/kubelet/kuberuntime"
	proberesults "k8s.io/kubernetes/pkg/kubelet/prober/results"
)

func init() {
	quiet := flag.NewFlagSet("klog", flag.ContinueOnError) // the fake runtime manager's packages log on every call
	klog.InitFlags(quiet)
	_ = quiet.Parse([]string{"-logtostderr=false", "-alsologtostderr=false", "-stderrthreshold=FATAL"})
	klog.SetOutput(io.Discard)
	handlers["GetPhase"] = getPhase
	handlers["HashContainer"] = hashContainer
	handlers["ComputePodActions"] = computePodActions
}

func getPhase(raw json.RawMessage) (any, error) {
	var a struct {
		Pod           v1.Pod               `json:"pod"`
		Statuses      []v1.ContainerStatus `json:"statuses"`
		PodIsTerminal bool                 `json:"podIsTerminal"`
	}
	if err := jsonserve.Decode(raw, &a); err != nil {
		return nil, err
	}
	return kubelet.HarnessGetPhase(&a.Pod, a.Statuses, a.PodIsTerminal), nil
}

func hashContainer(raw json.RawMessage) (any, error) {
	var a struct {
		Container v1.Container `json:"container"`
	}
	if err := jsonserve.Decode(raw, &a); err != nil {
		return nil, err
	}
	return kubecontainer.HashContainer(&a.Container), nil
}

// runtimeSandbox and runtimeContainer are the runtime's view the test generates: a PodSandboxStatus reduced to
// what computePodActions reads, and a kubecontainer.Status.
type runtimeSandbox struct {
	ID          string `json:"id"`
	Ready       bool   `json:"ready"`
	Attempt     uint32 `json:"attempt"`
	HostNetwork bool   `json:"hostNetwork"`
	IP          string `json:"ip"`
}

type runtimeContainer struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	State        string    `json:"state"`
	ExitCode     int       `json:"exitCode"`
	Hash         uint64    `json:"hash"`
	RestartCount int       `json:"restartCount"`
	Reason       string    `json:"reason"`
	FinishedAt   time.Time `json:"finishedAt"`
}

type podActionsArgs struct {
	Pod        v1.Pod             `json:"pod"`
	Sandboxes  []runtimeSandbox   `json:"sandboxes"`
	Containers []runtimeContainer `json:"containers"`
	Liveness   map[string]string  `json:"liveness"` // container ID: "Success" or "Failure"
	Startup    map[string]string  `json:"startup"`
}

const runtimeName = "containerd"

func (a podActionsArgs) podStatus() *kubecontainer.PodStatus {
	status := &kubecontainer.PodStatus{ID: a.Pod.UID, Name: a.Pod.Name, Namespace: a.Pod.Namespace}
	for _, s := range a.Sandboxes {
		state, mode := runtimeapi.PodSandboxState_SANDBOX_NOTREADY, runtimeapi.NamespaceMode_POD
		if s.Ready {
			state = runtimeapi.PodSandboxState_SANDBOX_READY
		}
		if s.HostNetwork {
			mode = runtimeapi.NamespaceMode_NODE
		}
		status.SandboxStatuses = append(status.SandboxStatuses, &runtimeapi.PodSandboxStatus{
			Id: s.ID, State: state, Metadata: &runtimeapi.PodSandboxMetadata{Attempt: s.Attempt},
			Network: &runtimeapi.PodSandboxNetworkStatus{Ip: s.IP},
			Linux: &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{
				Options: &runtimeapi.NamespaceOption{Network: mode}}},
		})
	}
	for _, c := range a.Containers {
		status.ContainerStatuses = append(status.ContainerStatuses, &kubecontainer.Status{
			ID: kubecontainer.ContainerID{Type: runtimeName, ID: c.ID}, Name: c.Name,
			State: kubecontainer.State(c.State), ExitCode: c.ExitCode, Hash: c.Hash, RestartCount: c.RestartCount,
			Reason: c.Reason, FinishedAt: c.FinishedAt,
		})
	}
	return status
}

func probeResults(byID map[string]string) map[kubecontainer.ContainerID]proberesults.Result {
	results := map[kubecontainer.ContainerID]proberesults.Result{}
	for id, text := range byID {
		result := proberesults.Failure
		if text == "Success" {
			result = proberesults.Success
		}
		results[kubecontainer.ContainerID{Type: runtimeName, ID: id}] = result
	}
	return results
}

func computePodActions(raw json.RawMessage) (any, error) {
	var a podActionsArgs
	if err := jsonserve.Decode(raw, &a); err != nil {
		return nil, err
	}
	actions, kill, err := kuberuntime.HarnessComputePodActions(&a.Pod, a.podStatus(), probeResults(a.Liveness),
		probeResults(a.Startup))
	if err != nil {
		return nil, err
	}
	return fields(actions, kill), nil
}

// fields is a podActions as JSON: each field by its Go name, the next init container by its name, and the
// containers to kill keyed by ID (the map's own key type has no JSON form).
func fields(actions any, kill map[string]kuberuntime.HarnessContainerToKill) map[string]any {
	out := map[string]any{"ContainersToKill": kill}
	v := reflect.ValueOf(actions)
	for i := 0; i < v.NumField(); i++ {
		name, value := v.Type().Field(i).Name, v.Field(i).Interface()
		if c, ok := value.(*v1.Container); ok {
			value = nil
			if c != nil {
				value = c.Name
			}
		}
		if name != "ContainersToKill" {
			out[name] = value
		}
	}
	return out
}
