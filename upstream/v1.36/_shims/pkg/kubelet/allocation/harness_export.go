package allocation

// Added to upstream's package by the differential harness at build time: one wrapper, nothing else.

import (
	"context"
	"errors"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/cm"
	"k8s.io/kubernetes/pkg/kubelet/config"
	containertest "k8s.io/kubernetes/pkg/kubelet/container/testing"
	"k8s.io/kubernetes/pkg/kubelet/lifecycle"
	kubepod "k8s.io/kubernetes/pkg/kubelet/pod"
	"k8s.io/kubernetes/pkg/kubelet/preemption"
	"k8s.io/kubernetes/pkg/kubelet/status"
	statustest "k8s.io/kubernetes/pkg/kubelet/status/testing"
	kubetypes "k8s.io/kubernetes/pkg/kubelet/types"
	kubeletutil "k8s.io/kubernetes/pkg/kubelet/util"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// harnessContainerManager is the package tests' fake container manager with the node's allocatable and config.
type harnessContainerManager struct {
	*cm.FakeContainerManager
	allocatable v1.ResourceList
	nodeConfig  cm.NodeConfig
}

func (h *harnessContainerManager) GetNodeAllocatableAbsolute() v1.ResourceList { return h.allocatable }
func (h *harnessContainerManager) GetNodeConfig() cm.NodeConfig                { return h.nodeConfig }

// HarnessResize is what handlePodResourcesResize left: the resize conditions (and which kept the transition
// time the same condition had before), the allocation, the events.
type HarnessResize struct {
	Conditions      []*v1.PodCondition `json:"conditions"`
	KeptTransition  map[string]bool    `json:"keptTransition"`
	Allocated       *v1.Pod            `json:"allocated"`
	ResizeAllocated bool               `json:"resizeAllocated"`
	Events          []string           `json:"events"`
	Preempted       []string           `json:"preempted"`
}

// harnessManager builds the manager as the package's tests do (makeAllocationManager: an in-memory manager, a
// status manager on a fake client, the resize admit handler), then the predicate admit handler with the kubelet's
// critical-pod preemption, whose victims (the pods it would kill) are appended to *preempted.
func harnessManager(active []*v1.Pod, node *v1.Node, allocatable v1.ResourceList, nodeConfig cm.NodeConfig,
	swap map[string]kubetypes.SwapBehavior, preempted *[]string) (*manager, status.Manager, *record.FakeRecorder) {
	logger := klog.Background()
	statusManager := status.NewManager(&fake.Clientset{}, kubepod.NewBasicPodManager(),
		&statustest.FakePodDeletionSafetyProvider{}, kubeletutil.NewPodStartupLatencyTracker())
	recorder := record.NewFakeRecorder(1000)
	am := NewInMemoryManager(statusManager, func(*v1.Pod) {}, func() []*v1.Pod { return active },
		func(uid types.UID) (*v1.Pod, bool) {
			for _, p := range active {
				if p.UID == uid {
					return p, true
				}
			}
			return nil, false
		}, config.NewSourcesReady(func(sets.Set[string]) bool { return true }), recorder)
	runtime := &containertest.FakeRuntime{SwapBehavior: swap}
	containerManager := &harnessContainerManager{cm.NewFakeContainerManager(), allocatable, nodeConfig}
	getNode := func(context.Context, bool) (*v1.Node, error) {
		if node == nil {
			return nil, errors.New("no node")
		}
		return node, nil
	}
	noPlugins := func(*framework.NodeInfo, *lifecycle.PodAdmitAttributes) error { return nil }
	kill := func(pod *v1.Pod, _ bool, _ *int64, _ func(*v1.PodStatus)) error {
		*preempted = append(*preempted, pod.Namespace+"/"+pod.Name)
		return nil
	}
	m := am.(*manager)
	am.AddPodAdmitHandlers(lifecycle.PodAdmitHandlers{
		NewPodResizesAdmitHandler(containerManager, runtime, am, logger),
		lifecycle.NewPredicateAdmitHandler(getNode, preemption.NewCriticalPodAdmissionHandler(
			func() []*v1.Pod { return m.getAllocatedPods(active) }, kill, record.NewFakeRecorder(1000)), noPlugins),
	})
	return m, statusManager, recorder
}

func drain(recorder *record.FakeRecorder) []string {
	events := []string{}
	for len(recorder.Events) > 0 {
		events = append(events, <-recorder.Events)
	}
	return events
}

// HarnessHandlePodResourcesResize allocates `allocated` and every other active pod at their spec, sets the
// given resize conditions, waits a millisecond, then calls handlePodResourcesResize with `desired`.
func HarnessHandlePodResourcesResize(allocated, desired *v1.Pod, others []*v1.Pod, node *v1.Node,
	allocatable v1.ResourceList, nodeConfig cm.NodeConfig, swap map[string]kubetypes.SwapBehavior,
	pending, inProgress *v1.PodCondition) (*HarnessResize, error) {
	out := &HarnessResize{KeptTransition: map[string]bool{}, Preempted: []string{}}
	m, statusManager, recorder := harnessManager(append([]*v1.Pod{desired}, others...), node, allocatable, nodeConfig,
		swap, &out.Preempted)
	for _, p := range append([]*v1.Pod{allocated}, others...) {
		if err := m.SetAllocatedResources(p); err != nil {
			return nil, err
		}
	}
	if pending != nil {
		statusManager.SetPodResizePendingCondition(desired.UID, pending.Reason, pending.Message, pending.ObservedGeneration)
	}
	if inProgress != nil {
		statusManager.SetPodResizeInProgressCondition(desired.UID, inProgress.Reason, inProgress.Message, inProgress.ObservedGeneration)
	}
	before := map[v1.PodConditionType]time.Time{}
	for _, c := range statusManager.GetPodResizeConditions(desired.UID) {
		before[c.Type] = c.LastTransitionTime.Time
	}
	time.Sleep(time.Millisecond)
	resized, err := m.handlePodResourcesResize(klog.Background(), desired)
	if err != nil {
		return nil, err
	}
	out.ResizeAllocated, out.Events = resized, drain(recorder)
	out.Conditions = statusManager.GetPodResizeConditions(desired.UID)
	for _, c := range out.Conditions {
		at, had := before[c.Type]
		out.KeptTransition[string(c.Type)] = had && at.Equal(c.LastTransitionTime.Time)
	}
	out.Allocated, _ = m.UpdatePodFromAllocation(desired)
	return out, nil
}

// HarnessRetryPod is one pod of a retry: how it was allocated, what it asks for, and whether (and for how
// long, in the order given) it has been Deferred.
type HarnessRetryPod struct {
	Allocated *v1.Pod `json:"allocated"`
	Desired   *v1.Pod `json:"desired"`
	Deferred  string  `json:"deferred"`
}

// HarnessRetried is the queue after each push, then what retryPendingResizes resized and left, and each pod's
// conditions and allocation afterwards.
type HarnessRetried struct {
	Queues     [][]types.UID                    `json:"queues"`
	Resized    []types.UID                      `json:"resized"`
	Left       []types.UID                      `json:"left"`
	Conditions map[types.UID][]*v1.PodCondition `json:"conditions"`
	Allocated  map[types.UID]*v1.Pod            `json:"allocated"`
	Events     []string                         `json:"events"`
	Preempted  []string                         `json:"preempted"`
}

// HarnessRetryPendingResizes allocates every pod (and the other active pods), marks the Deferred ones as
// Deferred a millisecond apart, in order, pushes each pod's UID in order and then retries the queue.
func HarnessRetryPendingResizes(pods []HarnessRetryPod, others []*v1.Pod, node *v1.Node,
	allocatable v1.ResourceList, trigger string) (*HarnessRetried, error) {
	active := append([]*v1.Pod{}, others...)
	for _, p := range pods {
		active = append(active, p.Desired)
	}
	out := &HarnessRetried{Queues: [][]types.UID{}, Resized: []types.UID{}, Conditions: map[types.UID][]*v1.PodCondition{},
		Allocated: map[types.UID]*v1.Pod{}, Preempted: []string{}}
	m, statusManager, recorder := harnessManager(active, node, allocatable, cm.NodeConfig{}, nil, &out.Preempted)
	for _, p := range pods {
		if err := m.SetAllocatedResources(p.Allocated); err != nil {
			return nil, err
		}
	}
	for _, p := range others {
		if err := m.SetAllocatedResources(p); err != nil {
			return nil, err
		}
	}
	for _, p := range pods {
		if p.Deferred != "" {
			statusManager.SetPodResizePendingCondition(p.Desired.UID, v1.PodReasonDeferred, p.Deferred, p.Desired.Generation)
			time.Sleep(time.Millisecond)
		}
	}
	for _, p := range pods {
		m.PushPendingResize(p.Desired.UID)
		out.Queues = append(out.Queues, append([]types.UID{}, m.podsWithPendingResizes...))
	}
	for _, p := range m.retryPendingResizes(klog.Background(), trigger) {
		out.Resized = append(out.Resized, p.UID)
	}
	out.Left = m.podsWithPendingResizes
	for _, p := range pods {
		out.Conditions[p.Desired.UID] = statusManager.GetPodResizeConditions(p.Desired.UID)
		out.Allocated[p.Desired.UID], _ = m.UpdatePodFromAllocation(p.Desired)
	}
	out.Events = drain(recorder)
	return out, nil
}
