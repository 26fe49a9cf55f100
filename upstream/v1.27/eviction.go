package main

// The eviction manager's ranking and threshold helpers (unexported upstream) through the shim in
// _shims/pkg/kubelet/eviction/. Pods are ranked with the statsFunc makeSignalObservations builds from the
// Summary, as the manager ranks them. Answers that upstream builds from a Go map come in its random order.

import (
	"encoding/json"
	"flag"
	"io"
	"time"

	jsonserve "upstream-jsonserve"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/kubernetes/pkg/kubelet/eviction"
	evictionapi "k8s.io/kubernetes/pkg/kubelet/eviction/api"
)

// The helpers whose v1.36 signatures take a logger, at v1.27's.
var (
	observe = eviction.HarnessMakeSignalObservations
	met     = eviction.HarnessThresholdsMet
	updated = eviction.HarnessThresholdsUpdatedStats
	graced  = eviction.HarnessThresholdsMetGracePeriod
	reclaim = eviction.HarnessGetReclaimableThreshold
)

func init() {
	// The helpers log each signal without an observation, each threshold in its grace period: to no one.
	flags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(flags)
	_ = flags.Set("logtostderr", "false")
	_ = flags.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
	handlers["EvictionRank"] = evictionRank
	handlers["EvictionObservations"] = evictionObservations
	handlers["EvictionThresholdsMet"] = evictionThresholdsMet
	handlers["EvictionThresholdsUpdatedStats"] = evictionThresholdsUpdatedStats
	handlers["EvictionThresholdsFirstObservedAt"] = evictionThresholdsFirstObservedAt
	handlers["EvictionThresholdsMetGracePeriod"] = evictionThresholdsMetGracePeriod
	handlers["EvictionMergeThresholds"] = evictionMergeThresholds
	handlers["EvictionNodeConditions"] = evictionNodeConditions
	handlers["EvictionNodeConditionsLastObservedAt"] = evictionNodeConditionsLastObservedAt
	handlers["EvictionNodeConditionsObservedSince"] = evictionNodeConditionsObservedSince
	handlers["EvictionHasNodeCondition"] = evictionHasNodeCondition
	handlers["EvictionGetReclaimableThreshold"] = evictionGetReclaimableThreshold
	handlers["EvictionMessage"] = evictionMessage
}

// plainValue and plainThreshold are evictionapi's types as plain JSON: a quantity's text, a float32 fraction,
// the grace period in nanoseconds.
type plainValue struct {
	Quantity   *string `json:"quantity"`
	Percentage float32 `json:"percentage"`
}

type plainThreshold struct {
	Signal      string      `json:"signal"`
	Operator    string      `json:"operator"`
	Value       plainValue  `json:"value"`
	GracePeriod int64       `json:"gracePeriod"`
	MinReclaim  *plainValue `json:"minReclaim"`
}

func toValue(v plainValue) (evictionapi.ThresholdValue, error) {
	out := evictionapi.ThresholdValue{Percentage: v.Percentage}
	if v.Quantity != nil {
		q, err := resource.ParseQuantity(*v.Quantity)
		if err != nil {
			return out, jsonserve.Fault{}
		}
		out.Quantity = &q
	}
	return out, nil
}

func toThresholds(in []plainThreshold) ([]evictionapi.Threshold, error) {
	out := []evictionapi.Threshold{}
	for _, t := range in {
		value, err := toValue(t.Value)
		if err != nil {
			return nil, err
		}
		next := evictionapi.Threshold{Signal: evictionapi.Signal(t.Signal), Operator: evictionapi.ThresholdOperator(t.Operator),
			Value: value, GracePeriod: time.Duration(t.GracePeriod)}
		if t.MinReclaim != nil {
			minReclaim, err := toValue(*t.MinReclaim)
			if err != nil {
				return nil, err
			}
			next.MinReclaim = &minReclaim
		}
		out = append(out, next)
	}
	return out, nil
}

func fromValue(v evictionapi.ThresholdValue) plainValue {
	out := plainValue{Percentage: v.Percentage}
	if v.Quantity != nil {
		text := v.Quantity.String()
		out.Quantity = &text
	}
	return out
}

func fromThreshold(t evictionapi.Threshold) plainThreshold {
	out := plainThreshold{Signal: string(t.Signal), Operator: string(t.Operator), Value: fromValue(t.Value),
		GracePeriod: int64(t.GracePeriod)}
	if t.MinReclaim != nil {
		minReclaim := fromValue(*t.MinReclaim)
		out.MinReclaim = &minReclaim
	}
	return out
}

func fromThresholds(in []evictionapi.Threshold) []plainThreshold {
	out := []plainThreshold{}
	for _, t := range in {
		out = append(out, fromThreshold(t))
	}
	return out
}

// thresholdsArgs are thresholds and the summary their signals are observed in.
type thresholdsArgs struct {
	Thresholds        []plainThreshold  `json:"thresholds"`
	Summary           statsapi.Summary  `json:"summary"`
	LastSummary       *statsapi.Summary `json:"lastSummary"`
	EnforceMinReclaim bool              `json:"enforceMinReclaim"`
}

func decodeThresholds(raw json.RawMessage) (thresholdsArgs, []evictionapi.Threshold, error) {
	var a thresholdsArgs
	if err := jsonserve.Decode(raw, &a); err != nil {
		return a, nil, err
	}
	thresholds, err := toThresholds(a.Thresholds)
	return a, thresholds, err
}

// evictionRank ranks the pods with stats from makeSignalObservations' statsFunc, and answers their names in order.
func evictionRank(raw json.RawMessage) (any, error) {
	var a struct {
		Rank     string           `json:"rank"` // memory, pid or disk
		FsStats  []string         `json:"fsStats"`
		Resource v1.ResourceName  `json:"resource"`
		Summary  statsapi.Summary `json:"summary"`
		Pods     []v1.Pod         `json:"pods"`
	}
	if err := jsonserve.Decode(raw, &a); err != nil {
		return nil, err
	}
	_, stats := observe(&a.Summary)
	pods := make([]*v1.Pod, len(a.Pods))
	for i := range a.Pods {
		pods[i] = &a.Pods[i]
	}
	switch a.Rank {
	case "memory":
		eviction.HarnessRankMemoryPressure(pods, stats)
	case "pid":
		eviction.HarnessRankPIDPressure(pods, stats)
	default:
		types := []eviction.HarnessFsStatsType{}
		for _, name := range a.FsStats {
			types = append(types, eviction.HarnessFsStatsType(name))
		}
		eviction.HarnessRankDiskPressureFunc(types, a.Resource)(pods, stats)
	}
	names := []string{}
	for _, pod := range pods {
		names = append(names, pod.Name)
	}
	return names, nil
}

type observation struct {
	Available int64      `json:"available"`
	Capacity  int64      `json:"capacity"`
	Time      *time.Time `json:"time"` // null: the zero time
}

func evictionObservations(raw json.RawMessage) (any, error) {
	var a struct {
		Summary statsapi.Summary `json:"summary"`
	}
	if err := jsonserve.Decode(raw, &a); err != nil {
		return nil, err
	}
	observations, _ := observe(&a.Summary)
	out := map[evictionapi.Signal]observation{}
	for signal, o := range eviction.HarnessObservations(observations) {
		entry := observation{Available: o.Available, Capacity: o.Capacity}
		if !o.Time.IsZero() {
			at := o.Time
			entry.Time = &at
		}
		out[signal] = entry
	}
	return out, nil
}

func evictionThresholdsMet(raw json.RawMessage) (any, error) {
	a, thresholds, err := decodeThresholds(raw)
	if err != nil {
		return nil, err
	}
	observations, _ := observe(&a.Summary)
	return fromThresholds(met(thresholds, observations, a.EnforceMinReclaim)), nil
}

func evictionThresholdsUpdatedStats(raw json.RawMessage) (any, error) {
	a, thresholds, err := decodeThresholds(raw)
	if err != nil {
		return nil, err
	}
	observations, _ := observe(&a.Summary)
	last := eviction.HarnessSignalObservations{}
	if a.LastSummary != nil {
		last, _ = observe(a.LastSummary)
	}
	return fromThresholds(updated(thresholds, observations, last)), nil
}

// observedAtArgs: thresholds (as the manager's config holds them) and when some were observed, by index, so that
// the map's keys are the very thresholds of the list, pointers and all, as in the manager.
type observedAtArgs struct {
	Thresholds []plainThreshold `json:"thresholds"`
	Met        []int            `json:"met"`
	ObservedAt []struct {
		Index int       `json:"index"`
		At    time.Time `json:"at"`
	} `json:"observedAt"`
	Now time.Time `json:"now"`
}

type thresholdAt struct {
	Threshold plainThreshold `json:"threshold"`
	At        time.Time      `json:"at"`
}

func decodeObservedAt(raw json.RawMessage) (observedAtArgs, []evictionapi.Threshold, map[evictionapi.Threshold]time.Time, error) {
	var a observedAtArgs
	if err := jsonserve.Decode(raw, &a); err != nil {
		return a, nil, nil, err
	}
	thresholds, err := toThresholds(a.Thresholds)
	if err != nil {
		return a, nil, nil, err
	}
	observedAt := map[evictionapi.Threshold]time.Time{}
	for _, entry := range a.ObservedAt {
		observedAt[thresholds[entry.Index]] = entry.At
	}
	return a, thresholds, observedAt, nil
}

func evictionThresholdsFirstObservedAt(raw json.RawMessage) (any, error) {
	a, thresholds, last, err := decodeObservedAt(raw)
	if err != nil {
		return nil, err
	}
	current := []evictionapi.Threshold{}
	for _, index := range a.Met {
		current = append(current, thresholds[index])
	}
	out := []thresholdAt{}
	for t, at := range eviction.HarnessThresholdsFirstObservedAt(current, last, a.Now) {
		out = append(out, thresholdAt{fromThreshold(t), at})
	}
	return out, nil // in Go's map order
}

func evictionThresholdsMetGracePeriod(raw json.RawMessage) (any, error) {
	a, _, observedAt, err := decodeObservedAt(raw)
	if err != nil {
		return nil, err
	}
	return fromThresholds(graced(observedAt, a.Now)), nil // in Go's map order
}

func evictionMergeThresholds(raw json.RawMessage) (any, error) {
	var a struct {
		A []plainThreshold `json:"a"`
		B []plainThreshold `json:"b"`
	}
	if err := jsonserve.Decode(raw, &a); err != nil {
		return nil, err
	}
	inputsA, err := toThresholds(a.A)
	if err != nil {
		return nil, err
	}
	inputsB, err := toThresholds(a.B)
	if err != nil {
		return nil, err
	}
	return fromThresholds(eviction.HarnessMergeThresholds(inputsA, inputsB)), nil
}

func evictionNodeConditions(raw json.RawMessage) (any, error) {
	_, thresholds, err := decodeThresholds(raw)
	if err != nil {
		return nil, err
	}
	return eviction.HarnessNodeConditions(thresholds), nil
}

func evictionNodeConditionsLastObservedAt(raw json.RawMessage) (any, error) {
	var a struct {
		Conditions     []v1.NodeConditionType             `json:"conditions"`
		LastObservedAt map[v1.NodeConditionType]time.Time `json:"lastObservedAt"`
		Now            time.Time                          `json:"now"`
	}
	if err := jsonserve.Decode(raw, &a); err != nil {
		return nil, err
	}
	return eviction.HarnessNodeConditionsLastObservedAt(a.Conditions, a.LastObservedAt, a.Now), nil
}

func evictionNodeConditionsObservedSince(raw json.RawMessage) (any, error) {
	var a struct {
		ObservedAt map[v1.NodeConditionType]time.Time `json:"observedAt"`
		Period     int64                              `json:"period"`
		Now        time.Time                          `json:"now"`
	}
	if err := jsonserve.Decode(raw, &a); err != nil {
		return nil, err
	}
	return eviction.HarnessNodeConditionsObservedSince(a.ObservedAt, time.Duration(a.Period), a.Now), nil // map order
}

func evictionHasNodeCondition(raw json.RawMessage) (any, error) {
	var a struct {
		Inputs []v1.NodeConditionType `json:"inputs"`
		Item   v1.NodeConditionType   `json:"item"`
	}
	if err := jsonserve.Decode(raw, &a); err != nil {
		return nil, err
	}
	return eviction.HarnessHasNodeCondition(a.Inputs, a.Item), nil
}

func evictionGetReclaimableThreshold(raw json.RawMessage) (any, error) {
	_, thresholds, err := decodeThresholds(raw)
	if err != nil {
		return nil, err
	}
	found, name, ok := reclaim(thresholds)
	return map[string]any{"threshold": fromThreshold(found), "resource": name, "found": ok}, nil
}

func evictionMessage(raw json.RawMessage) (any, error) {
	var a struct {
		Resource v1.ResourceName `json:"resource"`
		Pod      v1.Pod          `json:"pod"`
	}
	if err := jsonserve.Decode(raw, &a); err != nil {
		return nil, err
	}
	b, thresholds, err := decodeThresholds(raw)
	if err != nil {
		return nil, err
	}
	observations, stats := observe(&b.Summary)
	message, annotations := eviction.HarnessEvictionMessage(a.Resource, &a.Pod, stats, thresholds, observations)
	return map[string]any{"message": message, "annotations": annotations}, nil
}
