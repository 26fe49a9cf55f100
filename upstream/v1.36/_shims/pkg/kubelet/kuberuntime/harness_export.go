package kuberuntime

// Added to upstream's package by the differential harness at build time: exported names and a thin wrapper.

import (
	"context"

	oteltrace "go.opentelemetry.io/otel/trace"
	v1 "k8s.io/api/core/v1"
	apitest "k8s.io/cri-api/pkg/apis/testing"
	kubecontainer "k8s.io/kubernetes/pkg/kubelet/container"
	containertest "k8s.io/kubernetes/pkg/kubelet/container/testing"
	proberesults "k8s.io/kubernetes/pkg/kubelet/prober/results"
)

// HarnessContainerToKill is one containerToKillInfo's fields.
type HarnessContainerToKill struct {
	Name, Container, Message, Reason string
}

// HarnessComputePodActions calls computePodActions on a manager made as the package's tests make one
// (newFakeKubeRuntimeManager with the cri-api fake runtime and image services), with the given probe results.
// It returns the podActions (its ContainersToKill emptied) and that map keyed by the container ID's ID.
func HarnessComputePodActions(pod *v1.Pod, status *kubecontainer.PodStatus, liveness, startup map[kubecontainer.ContainerID]proberesults.Result, restartAllContainers bool) (any, map[string]HarnessContainerToKill, error) {
	m, err := newFakeKubeRuntimeManager(context.Background(), apitest.NewFakeRuntimeService(), apitest.NewFakeImageService(), nil,
		&containertest.FakeOS{}, &containertest.FakeRuntimeHelper{},
		oteltrace.NewNoopTracerProvider().Tracer(""))
	if err != nil {
		return nil, nil, err
	}
	for id, result := range liveness {
		m.livenessManager.Set(id, result, pod)
	}
	for id, result := range startup {
		m.startupManager.Set(id, result, pod)
	}
	actions := m.computePodActions(context.Background(), pod, status, restartAllContainers)
	kill := map[string]HarnessContainerToKill{}
	for id, info := range actions.ContainersToKill {
		kill[id.ID] = HarnessContainerToKill{info.name, info.container.Name, info.message, string(info.reason)}
	}
	actions.ContainersToKill = nil
	return actions, kill, nil
}
