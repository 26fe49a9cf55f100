package main

// The functions the harness exposes, by name. Each decodes its args and calls v1.36.5's exported function.
// Reached only through an exported caller (their own names are unexported in v1.36):
//   - Admit: the predicate admit handler's generalFilter, through lifecycle.NewPredicateAdmitHandler(...).Admit
//     with preemption's CriticalPodAdmissionHandler;
//   - Fits: the scheduler's fitsRequest and computePodResourceRequest, through noderesources.Fits.
// FeatureGateSpecs (features.go): the specs the kubelet's global feature gate registers, through GetAll.
// Reached through a shim (_shims/pkg/kubelet/cm/harness_export.go), in cm.go: CPUWeight, the cgroup manager's
// unexported getCPUWeight, which is what it writes to cpu.weight on cgroup v2. CgroupV2Weight calls the
// exported conversion of github.com/opencontainers/cgroups, which runtimes use for containers; the kubelet does
// not. Other files add handlers from init(): resource.go (GetResourceRequestQuantity, GetResourceRequest).
// Reached through a shim (_shims/pkg/kubelet/eviction/, exported names only): the eviction ranking functions and
// threshold helpers, all unexported; their handlers are in eviction.go.
// Through a shim (_shims/pkg/kubelet/allocation/, handlers in allocation.go): the allocation manager's unexported
// handlePodResourcesResize and retryPendingResizes, on a manager built as its package's tests build one.
// Through shims (_shims/, handlers in phase.go): kubelet's getPhase, and kuberuntime's computePodActions (with its
// restartAllContainers argument) on the manager the package's tests build (newFakeKubeRuntimeManager, with the
// exported fakes of k8s.io/cri-api/pkg/apis/testing and pkg/kubelet/container/testing, probe results set in its managers).

import (
	"context"
	"encoding/json"

	"errors"
	"runtime"
	"strconv"
	"time"
	jsonserve "upstream-jsonserve"

	"github.com/opencontainers/cgroups"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/tools/record"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1qos "k8s.io/kubernetes/pkg/apis/core/v1/helper/qos"
	"k8s.io/kubernetes/pkg/features"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	"k8s.io/kubernetes/pkg/kubelet/cm"
	"k8s.io/kubernetes/pkg/kubelet/eviction"
	evictionapi "k8s.io/kubernetes/pkg/kubelet/eviction/api"
	"k8s.io/kubernetes/pkg/kubelet/lifecycle"
	"k8s.io/kubernetes/pkg/kubelet/preemption"
	kubeletqos "k8s.io/kubernetes/pkg/kubelet/qos"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources"
)

var handlers = map[string]jsonserve.Handler{
	"GetPodQOS":                  getPodQOS,
	"ComputePodQOS":              computePodQOS,
	"GetContainerOOMScoreAdjust": getContainerOOMScoreAdjust,
	"PodRequests":                podResources(resourcehelper.PodRequests),
	"PodLimits":                  podResources(resourcehelper.PodLimits),
	"MilliCPUToShares":           milliCPUToShares,
	"MilliCPUToQuota":            milliCPUToQuota,
	"CgroupV2Weight":             cgroupV2Weight,
	"HugePageLimits":             hugePageLimits,
	"ResourceConfigForPod":       resourceConfigForPod,
	"ParseThresholdConfig":       parseThresholdConfig,
	"Fits":                       fits,
	"Admit":                      admit,
	"Quantity":                   quantity,
	"GOOS":                       func(json.RawMessage) (any, error) { return runtime.GOOS, nil },
}

// quantity parses a quantity as the API does and reads it back as the kubelet does.
func quantity(raw json.RawMessage) (any, error) {
	var a struct {
		Text string `json:"text"`
	}
	if err := jsonserve.Decode(raw, &a); err != nil {
		return nil, err
	}
	q, err := resource.ParseQuantity(a.Text)
	if err != nil {
		return nil, err
	}
	return map[string]any{"string": q.String(), "value": q.Value(), "milliValue": q.MilliValue()}, nil
}

type podArgs struct {
	Pod v1.Pod `json:"pod"`
}

func getPodQOS(raw json.RawMessage) (any, error) {
	var a podArgs
	if err := jsonserve.Decode(raw, &a); err != nil {
		return nil, err
	}
	return corev1qos.GetPodQOS(&a.Pod), nil
}

func computePodQOS(raw json.RawMessage) (any, error) {
	var a podArgs
	if err := jsonserve.Decode(raw, &a); err != nil {
		return nil, err
	}
	return corev1qos.ComputePodQOS(&a.Pod), nil
}

func getContainerOOMScoreAdjust(raw json.RawMessage) (any, error) {
	var a struct {
		Pod            v1.Pod       `json:"pod"`
		Container      v1.Container `json:"container"`
		MemoryCapacity int64        `json:"memoryCapacity"`
	}
	if err := jsonserve.Decode(raw, &a); err != nil {
		return nil, err
	}
	return kubeletqos.GetContainerOOMScoreAdjust(&a.Pod, &a.Container, a.MemoryCapacity), nil
}

type containerCall struct {
	Type      string          `json:"type"`
	Resources v1.ResourceList `json:"resources"`
}

// podResources answers with the total and every ContainerFn call, in order.
func podResources(fn func(*v1.Pod, resourcehelper.PodResourcesOptions) v1.ResourceList) jsonserve.Handler {
	return func(raw json.RawMessage) (any, error) {
		var a struct {
			Pod                         v1.Pod          `json:"pod"`
			ExcludeOverhead             bool            `json:"excludeOverhead"`
			UseStatusResources          bool            `json:"useStatusResources"`
			SkipPodLevelResources       bool            `json:"skipPodLevelResources"`
			NonMissingContainerRequests v1.ResourceList `json:"nonMissingContainerRequests"`
		}
		if err := jsonserve.Decode(raw, &a); err != nil {
			return nil, err
		}
		calls := []containerCall{}
		total := fn(&a.Pod, resourcehelper.PodResourcesOptions{
			ExcludeOverhead:             a.ExcludeOverhead,
			UseStatusResources:          a.UseStatusResources,
			SkipPodLevelResources:       a.SkipPodLevelResources,
			NonMissingContainerRequests: a.NonMissingContainerRequests,
			ContainerFn: func(res v1.ResourceList, t resourcehelper.ContainerType) {
				name := map[resourcehelper.ContainerType]string{resourcehelper.Containers: "containers", resourcehelper.InitContainers: "initContainers"}[t]
				calls = append(calls, containerCall{name, res.DeepCopy()})
			},
		})
		return map[string]any{"resources": total, "containerFn": calls}, nil
	}
}

func milliCPUToShares(raw json.RawMessage) (any, error) {
	var a struct {
		MilliCPU int64 `json:"milliCPU"`
	}
	if err := jsonserve.Decode(raw, &a); err != nil {
		return nil, err
	}
	return cm.MilliCPUToShares(a.MilliCPU), nil
}

func milliCPUToQuota(raw json.RawMessage) (any, error) {
	var a struct {
		MilliCPU int64 `json:"milliCPU"`
		Period   int64 `json:"period"`
	}
	if err := jsonserve.Decode(raw, &a); err != nil {
		return nil, err
	}
	return cm.MilliCPUToQuota(a.MilliCPU, a.Period), nil
}

func cgroupV2Weight(raw json.RawMessage) (any, error) {
	var a struct {
		CPUShares uint64 `json:"cpuShares"`
	}
	if err := jsonserve.Decode(raw, &a); err != nil {
		return nil, err
	}
	return cgroups.ConvertCPUSharesToCgroupV2Value(a.CPUShares), nil
}

func hugePageLimits(raw json.RawMessage) (any, error) {
	var a struct {
		Resources v1.ResourceList `json:"resources"`
	}
	if err := jsonserve.Decode(raw, &a); err != nil {
		return nil, err
	}
	return cm.HugePageLimits(a.Resources), nil
}

func resourceConfigForPod(raw json.RawMessage) (any, error) {
	var a struct {
		Pod              v1.Pod `json:"pod"`
		EnforceCPULimits bool   `json:"enforceCPULimits"`
		CPUPeriod        uint64 `json:"cpuPeriod"`
		EnforceMemoryQoS bool   `json:"enforceMemoryQoS"`
		// MemoryReservationPolicy is new in v1.36: "" reads as None.
		MemoryReservationPolicy kubeletconfig.MemoryReservationPolicy `json:"memoryReservationPolicy"`
	}
	if err := jsonserve.Decode(raw, &a); err != nil {
		return nil, err
	}
	if a.MemoryReservationPolicy == "" {
		a.MemoryReservationPolicy = kubeletconfig.NoneMemoryReservationPolicy
	}
	return cm.ResourceConfigForPod(&a.Pod, a.EnforceCPULimits, a.CPUPeriod, a.EnforceMemoryQoS,
		a.MemoryReservationPolicy), nil
}

// thresholdValue prints the percentage as Go formats a float32, so NaN and infinities survive JSON.
type thresholdValue struct {
	Quantity   *string `json:"quantity"`
	Percentage string  `json:"percentage"`
}

func valueOf(v evictionapi.ThresholdValue) thresholdValue {
	out := thresholdValue{Percentage: strconv.FormatFloat(float64(v.Percentage), 'g', -1, 32)}
	if v.Quantity != nil {
		text := v.Quantity.String()
		out.Quantity = &text
	}
	return out
}

func parseThresholdConfig(raw json.RawMessage) (any, error) {
	var a struct {
		AllocatableConfig       []string          `json:"allocatableConfig"`
		EvictionHard            map[string]string `json:"evictionHard"`
		EvictionSoft            map[string]string `json:"evictionSoft"`
		EvictionSoftGracePeriod map[string]string `json:"evictionSoftGracePeriod"`
		EvictionMinimumReclaim  map[string]string `json:"evictionMinimumReclaim"`
	}
	if err := jsonserve.Decode(raw, &a); err != nil {
		return nil, err
	}
	thresholds, err := eviction.ParseThresholdConfig(a.AllocatableConfig, a.EvictionHard, a.EvictionSoft,
		a.EvictionSoftGracePeriod, a.EvictionMinimumReclaim)
	if err != nil {
		return nil, err
	}
	out := []map[string]any{}
	for _, t := range thresholds {
		entry := map[string]any{"signal": t.Signal, "operator": t.Operator, "value": valueOf(t.Value),
			"gracePeriod": int64(t.GracePeriod / time.Nanosecond), "minReclaim": nil}
		if t.MinReclaim != nil {
			entry["minReclaim"] = valueOf(*t.MinReclaim)
		}
		out = append(out, entry)
	}
	return out, nil
}

type nodeArgs struct {
	Pod  v1.Pod    `json:"pod"`
	Node *v1.Node  `json:"node"`
	Pods []*v1.Pod `json:"pods"`
}

func fits(raw json.RawMessage) (any, error) {
	var a nodeArgs
	if err := jsonserve.Decode(raw, &a); err != nil {
		return nil, err
	}
	info := framework.NewNodeInfo(a.Pods...)
	if a.Node != nil {
		info.SetNode(a.Node)
	}
	opts := noderesources.ResourceRequestsOptions{
		EnablePodLevelResources: utilfeature.DefaultFeatureGate.Enabled(features.PodLevelResources),
	}
	out := noderesources.Fits(&a.Pod, info, nil, opts)
	if out == nil {
		out = []noderesources.InsufficientResource{}
	}
	return out, nil
}

// admit runs the kubelet's predicate admit handler; pods it preempts for a critical pod are named in "preempted".
func admit(raw json.RawMessage) (any, error) {
	var a nodeArgs
	if err := jsonserve.Decode(raw, &a); err != nil {
		return nil, err
	}
	getNode := func(context.Context, bool) (*v1.Node, error) {
		if a.Node == nil {
			return nil, errors.New("no node")
		}
		return a.Node, nil
	}
	preempted := []string{}
	kill := func(pod *v1.Pod, _ bool, _ *int64, _ func(*v1.PodStatus)) error {
		preempted = append(preempted, pod.Namespace+"/"+pod.Name)
		return nil
	}
	failures := preemption.NewCriticalPodAdmissionHandler(func() []*v1.Pod { return a.Pods }, kill, record.NewFakeRecorder(100))
	noPlugins := func(*framework.NodeInfo, *lifecycle.PodAdmitAttributes) error { return nil }
	result := lifecycle.NewPredicateAdmitHandler(getNode, failures, noPlugins).Admit(
		&lifecycle.PodAdmitAttributes{Pod: &a.Pod, OtherPods: a.Pods})
	return map[string]any{"admit": result.Admit, "reason": result.Reason, "message": result.Message,
		"preempted": preempted}, nil
}
