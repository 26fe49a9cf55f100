package main

// In-place resize on the node: computePodActions with actuated resources, doPodResizeAction with every pod cgroup
// write and UpdateContainerResources call recorded in order, and the runtime status's resources as the kubelet
// reads them; reached through the shim _shims/pkg/kubelet/kuberuntime/harness_resize.go.

import (
	"encoding/json"

	jsonserve "upstream-jsonserve"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/kubernetes/pkg/kubelet/kuberuntime"
)

func init() {
	handlers["ComputePodResizeActions"] = computePodResizeActions
	handlers["DoPodResizeAction"] = doPodResizeAction
	handlers["ToKubeContainerResources"] = toKubeContainerResources
}

type resizeArgs struct {
	podActionsArgs
	Resize kuberuntime.HarnessResizeInput `json:"resize"`
}

func computePodResizeActions(raw json.RawMessage) (any, error) {
	var a resizeArgs
	if err := jsonserve.Decode(raw, &a); err != nil {
		return nil, err
	}
	actions, kill, updates, set, err := kuberuntime.HarnessComputePodResizeActions(&a.Pod, a.podStatus(),
		probeResults(a.Liveness), probeResults(a.Startup), a.RestartAllContainers, a.Resize)
	if err != nil {
		return nil, err
	}
	out := fields(actions, kill)
	out["ContainersToUpdate"] = updates
	out["ContainersToUpdateSet"] = set
	return out, nil
}

func doPodResizeAction(raw json.RawMessage) (any, error) {
	var a resizeArgs
	if err := jsonserve.Decode(raw, &a); err != nil {
		return nil, err
	}
	return kuberuntime.HarnessDoPodResizeAction(&a.Pod, a.podStatus(), a.Resize)
}

func toKubeContainerResources(raw json.RawMessage) (any, error) {
	var a struct {
		Linux *runtimeapi.LinuxContainerResources `json:"linux"`
	}
	if err := jsonserve.Decode(raw, &a); err != nil {
		return nil, err
	}
	r := kuberuntime.HarnessToKubeContainerResources(&runtimeapi.ContainerResources{Linux: a.Linux})
	if r == nil {
		return nil, nil
	}
	milli := func(q interface{ MilliValue() int64 }) *int64 { v := q.MilliValue(); return &v }
	out := map[string]*int64{}
	if r.CPURequest != nil {
		out["cpuRequest"] = milli(r.CPURequest)
	}
	if r.CPULimit != nil {
		out["cpuLimit"] = milli(r.CPULimit)
	}
	if r.MemoryLimit != nil {
		v := r.MemoryLimit.Value()
		out["memoryLimit"] = &v
	}
	if r.MemoryRequest != nil {
		v := r.MemoryRequest.Value()
		out["memoryRequest"] = &v
	}
	return out, nil
}
