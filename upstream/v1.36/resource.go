package main

import (
	"encoding/json"

	jsonserve "upstream-jsonserve"

	v1 "k8s.io/api/core/v1"
	v1resource "k8s.io/kubernetes/pkg/api/v1/resource"
)

// The kubelet's one-resource request of a pod (the critical-pod preemption and the eviction ranking read it).
func init() {
	handlers["GetResourceRequestQuantity"] = getResourceRequestQuantity
	handlers["GetResourceRequest"] = getResourceRequest
}

type requestArgs struct {
	Pod      v1.Pod          `json:"pod"`
	Resource v1.ResourceName `json:"resource"`
}

func getResourceRequestQuantity(raw json.RawMessage) (any, error) {
	var a requestArgs
	if err := jsonserve.Decode(raw, &a); err != nil {
		return nil, err
	}
	q := v1resource.GetResourceRequestQuantity(&a.Pod, a.Resource)
	return q.String(), nil
}

func getResourceRequest(raw json.RawMessage) (any, error) {
	var a requestArgs
	if err := jsonserve.Decode(raw, &a); err != nil {
		return nil, err
	}
	return v1resource.GetResourceRequest(&a.Pod, a.Resource), nil
}
