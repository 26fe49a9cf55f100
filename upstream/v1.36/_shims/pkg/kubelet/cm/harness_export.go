//go:build linux

package cm

// HarnessGetCPUWeight is the cgroup manager's own shares-to-weight conversion, which toResources writes to
// cpu.weight on cgroup v2 (the harness's name for it; the function is upstream's, unchanged).
var HarnessGetCPUWeight = getCPUWeight
