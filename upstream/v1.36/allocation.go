package main

// The allocation manager's resize decision (handlePodResourcesResize) and its queue of pending resizes
// (PushPendingResize's order, retryPendingResizes), through the shim in _shims/pkg/kubelet/allocation/: a manager
// built as the package's tests build one, with the node's allocatable, its CPU and memory manager policies and
// each container's swap behaviour given.

import (
	"encoding/json"

	jsonserve "upstream-jsonserve"

	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/kubelet/allocation"
	"k8s.io/kubernetes/pkg/kubelet/cm"
	kubetypes "k8s.io/kubernetes/pkg/kubelet/types"
)

func init() {
	handlers["HandlePodResourcesResize"] = handlePodResourcesResize
	handlers["RetryPendingResizes"] = retryPendingResizes
}

func retryPendingResizes(raw json.RawMessage) (any, error) {
	var a struct {
		Pods        []allocation.HarnessRetryPod `json:"pods"`
		Others      []*v1.Pod                    `json:"others"`
		Node        *v1.Node                     `json:"node"`
		Allocatable v1.ResourceList              `json:"allocatable"`
		Trigger     string                       `json:"trigger"`
	}
	if err := jsonserve.Decode(raw, &a); err != nil {
		return nil, err
	}
	return allocation.HarnessRetryPendingResizes(a.Pods, a.Others, a.Node, a.Allocatable, a.Trigger)
}

func handlePodResourcesResize(raw json.RawMessage) (any, error) {
	var a struct {
		Allocated   v1.Pod                            `json:"allocated"`
		Desired     v1.Pod                            `json:"desired"`
		Others      []*v1.Pod                         `json:"others"`
		Node        *v1.Node                          `json:"node"`
		Allocatable v1.ResourceList                   `json:"allocatable"`
		CPUPolicy   string                            `json:"cpuManagerPolicy"`
		MemPolicy   string                            `json:"memoryManagerPolicy"`
		Swap        map[string]kubetypes.SwapBehavior `json:"swap"`
		Pending     *v1.PodCondition                  `json:"pending"`
		InProgress  *v1.PodCondition                  `json:"inProgress"`
	}
	if err := jsonserve.Decode(raw, &a); err != nil {
		return nil, err
	}
	config := cm.NodeConfig{}
	config.CPUManagerPolicy, config.MemoryManagerPolicy = a.CPUPolicy, a.MemPolicy
	return allocation.HarnessHandlePodResourcesResize(&a.Allocated, &a.Desired, a.Others, a.Node, a.Allocatable,
		config, a.Swap, a.Pending, a.InProgress)
}
