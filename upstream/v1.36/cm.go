package main

import (
	"encoding/json"

	jsonserve "upstream-jsonserve"

	"k8s.io/kubernetes/pkg/kubelet/cm"
)

// CPUWeight is what v1.36's cgroup manager writes to cpu.weight on cgroup v2 for a pod or QoS cgroup's
// cpu.shares: toResources sets Resources.CpuWeight from its unexported getCPUWeight (reached through a shim),
// and github.com/opencontainers/cgroups writes that value as it is (fs2 and systemd drivers alike).
func init() {
	handlers["CPUWeight"] = cpuWeight
}

func cpuWeight(raw json.RawMessage) (any, error) {
	var a struct {
		CPUShares *uint64 `json:"cpuShares"`
	}
	if err := jsonserve.Decode(raw, &a); err != nil {
		return nil, err
	}
	return cm.HarnessGetCPUWeight(a.CPUShares), nil
}
