package kuberuntime

// Added to upstream's package by the differential harness at build time: computePodActions with actuated
// resources recorded first, and doPodResizeAction against a pod container manager and a runtime service that
// record, in order, every pod cgroup write and every UpdateContainerResources call.

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	cadvisorapi "github.com/google/cadvisor/info/v1"
	oteltrace "go.opentelemetry.io/otel/trace"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	apitest "k8s.io/cri-api/pkg/apis/testing"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/kubernetes/pkg/kubelet/cm"
	kubecontainer "k8s.io/kubernetes/pkg/kubelet/container"
	containertest "k8s.io/kubernetes/pkg/kubelet/container/testing"
	proberesults "k8s.io/kubernetes/pkg/kubelet/prober/results"
)

// HarnessResources is a containerResources' four values.
type HarnessResources struct {
	MemoryLimit, MemoryRequest, CPULimit, CPURequest int64
}

// HarnessContainerUpdate is one containerToUpdateInfo: the container's name, its runtime ID, desired and current.
type HarnessContainerUpdate struct {
	Container, ID    string
	Desired, Current HarnessResources
}

// HarnessWrite is one call the resize made: a pod cgroup write (Target "pod") or an UpdateContainerResources
// (Target the container ID), with the values it carried (nil: not set).
type HarnessWrite struct {
	Call, Target         string
	Memory, CPUQuota     *int64
	CPUShares, CPUPeriod *uint64
}

// HarnessResizeInput is what the manager, its pod container manager, runtime and helper are given.
type HarnessResizeInput struct {
	Actuated          map[string]v1.ResourceRequirements // container name: actuated resources (none: no record)
	PodMemory         *int64                             // the pod cgroup's memory limit as read back
	PodCPUShares      *uint64
	PodCPUQuota       *int64
	PodCPUPeriod      *uint64
	PodMemoryUsage    *uint64            // pod memory usage in the stats (nil: missing)
	ContainerUsage    map[string]*uint64 // container name: memory usage in the stats
	FailUpdate        int                // the n-th UpdateContainerResources fails (0: none)
	FailPodCgroupSet  int                // the n-th SetPodCgroupConfig fails (0: none)
	FailPodCgroupRead bool               // GetPodCgroupConfig fails
}

type harnessPCM struct {
	cm.PodContainerManager
	in    HarnessResizeInput
	log   *[]HarnessWrite
	calls int
}

func (p *harnessPCM) GetPodCgroupConfig(pod *v1.Pod, resource v1.ResourceName) (*cm.ResourceConfig, error) {
	if p.in.FailPodCgroupRead {
		return nil, errors.New("injected read failure")
	}
	if resource == v1.ResourceMemory {
		return &cm.ResourceConfig{Memory: p.in.PodMemory}, nil
	}
	return &cm.ResourceConfig{CPUShares: p.in.PodCPUShares, CPUQuota: p.in.PodCPUQuota, CPUPeriod: p.in.PodCPUPeriod}, nil
}

func (p *harnessPCM) SetPodCgroupConfig(logger klog.Logger, pod *v1.Pod, rc *cm.ResourceConfig) error {
	p.calls++
	if p.calls == p.in.FailPodCgroupSet {
		return errors.New("injected pod cgroup write failure")
	}
	*p.log = append(*p.log, HarnessWrite{Call: "SetPodCgroupConfig", Target: "pod", Memory: rc.Memory,
		CPUQuota: rc.CPUQuota, CPUShares: rc.CPUShares, CPUPeriod: rc.CPUPeriod})
	return nil
}

func (p *harnessPCM) GetPodCgroupMemoryUsage(pod *v1.Pod) (uint64, error) { return 0, nil }

type harnessCM struct {
	cm.ContainerManager
	pcm *harnessPCM
}

func (c *harnessCM) NewPodContainerManager() cm.PodContainerManager { return c.pcm }
func (c *harnessCM) PodHasExclusiveCPUs(pod *v1.Pod) bool            { return false }

type harnessRuntime struct {
	internalapi.RuntimeService
	in    HarnessResizeInput
	log   *[]HarnessWrite
	calls int
}

func (r *harnessRuntime) UpdateContainerResources(ctx context.Context, id string, res *runtimeapi.ContainerResources) error {
	r.calls++
	if r.calls == r.in.FailUpdate {
		return errors.New("injected UpdateContainerResources failure")
	}
	l := res.GetLinux()
	shares, period := uint64(l.GetCpuShares()), uint64(l.GetCpuPeriod())
	quota, memory := l.GetCpuQuota(), l.GetMemoryLimitInBytes()
	*r.log = append(*r.log, HarnessWrite{Call: "UpdateContainerResources", Target: id, Memory: &memory,
		CPUQuota: &quota, CPUShares: &shares, CPUPeriod: &period})
	return nil
}

func (r *harnessRuntime) UpdatePodSandboxResources(ctx context.Context, req *runtimeapi.UpdatePodSandboxResourcesRequest) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
	return &runtimeapi.UpdatePodSandboxResourcesResponse{}, nil
}

func harnessManager(pod *v1.Pod, liveness, startup map[kubecontainer.ContainerID]proberesults.Result, in HarnessResizeInput, log *[]HarnessWrite) (*kubeGenericRuntimeManager, error) {
	machine := &cadvisorapi.MachineInfo{MemoryCapacity: 16 << 30} // read for the OOM score only, which is not compared
	m, err := newFakeKubeRuntimeManager(context.Background(), apitest.NewFakeRuntimeService(), apitest.NewFakeImageService(), machine,
		&containertest.FakeOS{}, &containertest.FakeRuntimeHelper{}, oteltrace.NewNoopTracerProvider().Tracer(""))
	if err != nil {
		return nil, err
	}
	for id, result := range liveness {
		m.livenessManager.Set(id, result, pod)
	}
	for id, result := range startup {
		m.startupManager.Set(id, result, pod)
	}
	for name, resources := range in.Actuated {
		if err := m.actuatedState.SetContainerResources(pod.UID, name, resources); err != nil {
			return nil, err
		}
	}
	m.cpuCFSQuota = true
	m.cpuCFSQuotaPeriod = metav1.Duration{Duration: 100 * time.Millisecond}
	m.containerManager = &harnessCM{ContainerManager: m.containerManager, pcm: &harnessPCM{in: in, log: log}}
	m.runtimeService = &harnessRuntime{RuntimeService: m.runtimeService, in: in, log: log}
	stats := &statsapi.PodStats{Memory: &statsapi.MemoryStats{UsageBytes: in.PodMemoryUsage}}
	for _, name := range slices.Sorted(maps.Keys(in.ContainerUsage)) { // a map's order is random: the stats list them by name
		stats.Containers = append(stats.Containers, statsapi.ContainerStats{Name: name, Memory: &statsapi.MemoryStats{UsageBytes: in.ContainerUsage[name]}})
	}
	m.runtimeHelper = &containertest.FakeRuntimeHelper{PodStats: map[types.UID]*statsapi.PodStats{pod.UID: stats}}
	return m, nil
}

func harnessUpdates(actions podActions) map[string][]HarnessContainerUpdate {
	out := map[string][]HarnessContainerUpdate{}
	for resource, infos := range actions.ContainersToUpdate {
		for _, info := range infos {
			d, c := info.desiredContainerResources, info.currentContainerResources
			out[string(resource)] = append(out[string(resource)], HarnessContainerUpdate{
				Container: info.container.Name, ID: info.kubeContainerID.ID,
				Desired: HarnessResources{d.memoryLimit, d.memoryRequest, d.cpuLimit, d.cpuRequest},
				Current: HarnessResources{c.memoryLimit, c.memoryRequest, c.cpuLimit, c.cpuRequest},
			})
		}
	}
	return out
}

// HarnessComputePodResizeActions is HarnessComputePodActions with the actuated resources recorded first; it
// also returns ContainersToUpdate (emptied in the podActions) by resource name, and whether it was set at all.
func HarnessComputePodResizeActions(pod *v1.Pod, status *kubecontainer.PodStatus, liveness, startup map[kubecontainer.ContainerID]proberesults.Result, restartAllContainers bool, in HarnessResizeInput) (any, map[string]HarnessContainerToKill, map[string][]HarnessContainerUpdate, bool, error) {
	var log []HarnessWrite
	m, err := harnessManager(pod, liveness, startup, in, &log)
	if err != nil {
		return nil, nil, nil, false, err
	}
	actions := m.computePodActions(context.Background(), pod, status, restartAllContainers)
	kill := map[string]HarnessContainerToKill{}
	for id, info := range actions.ContainersToKill {
		kill[id.ID] = HarnessContainerToKill{info.name, info.container.Name, info.message, string(info.reason)}
	}
	updates, set := harnessUpdates(actions), actions.ContainersToUpdate != nil
	actions.ContainersToKill, actions.ContainersToUpdate = nil, nil
	return actions, kill, updates, set, nil
}

// HarnessResizeResult is what doPodResizeAction did: the calls in order, its SyncResult, and the actuated
// resources afterwards.
type HarnessResizeResult struct {
	Updates  map[string][]HarnessContainerUpdate
	Writes   []HarnessWrite
	Action   string
	Error    string
	Message  string
	Actuated map[string]v1.ResourceRequirements
}

// HarnessDoPodResizeAction runs computePodActions, then doPodResizeAction with its actions, as SyncPod's step 7 does.
func HarnessDoPodResizeAction(pod *v1.Pod, status *kubecontainer.PodStatus, in HarnessResizeInput) (*HarnessResizeResult, error) {
	var log []HarnessWrite
	m, err := harnessManager(pod, nil, nil, in, &log)
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	actions := m.computePodActions(ctx, pod, status, false)
	out := &HarnessResizeResult{Updates: harnessUpdates(actions), Actuated: map[string]v1.ResourceRequirements{}}
	result := m.doPodResizeAction(ctx, pod, status, actions)
	out.Writes, out.Action, out.Message = log, string(result.Action), result.Message
	if result.Error != nil {
		out.Error = result.Error.Error()
	}
	for _, c := range append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if r, found := m.actuatedState.GetContainerResources(pod.UID, c.Name); found {
			out.Actuated[c.Name] = r
		}
	}
	return out, nil
}

// HarnessToKubeContainerResources is the runtime status's resources as the kubelet reads them (upstream's, unchanged).
var HarnessToKubeContainerResources = toKubeContainerResources
