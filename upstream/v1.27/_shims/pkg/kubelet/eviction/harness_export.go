package eviction

// Added to upstream's package by the differential harness's build: exported names for unexported functions, its
// types by exported aliases, and one reader of signalObservation's unexported fields.

import (
	"time"

	evictionapi "k8s.io/kubernetes/pkg/kubelet/eviction/api"
)

var (
	HarnessRankMemoryPressure           = rankMemoryPressure
	HarnessRankPIDPressure              = rankPIDPressure
	HarnessRankDiskPressureFunc         = rankDiskPressureFunc
	HarnessMakeSignalObservations       = makeSignalObservations
	HarnessThresholdsMet                = thresholdsMet
	HarnessThresholdsUpdatedStats       = thresholdsUpdatedStats
	HarnessThresholdsFirstObservedAt    = thresholdsFirstObservedAt
	HarnessThresholdsMetGracePeriod     = thresholdsMetGracePeriod
	HarnessMergeThresholds              = mergeThresholds
	HarnessNodeConditions               = nodeConditions
	HarnessNodeConditionsLastObservedAt = nodeConditionsLastObservedAt
	HarnessNodeConditionsObservedSince  = nodeConditionsObservedSince
	HarnessHasNodeCondition             = hasNodeCondition
	HarnessGetReclaimableThreshold      = getReclaimableThreshold
	HarnessEvictionMessage              = evictionMessage
)

// The package's own types, by exported names.
type (
	HarnessFsStatsType        = fsStatsType
	HarnessStatsFunc          = statsFunc
	HarnessSignalObservations = signalObservations
)

// HarnessObservation is a signalObservation with exported fields.
type HarnessObservation struct {
	Available, Capacity int64
	Time                time.Time
}

// HarnessObservations reads each signal's observation.
func HarnessObservations(observations signalObservations) map[evictionapi.Signal]HarnessObservation {
	out := map[evictionapi.Signal]HarnessObservation{}
	for signal, observed := range observations {
		out[signal] = HarnessObservation{observed.available.Value(), observed.capacity.Value(), observed.time.Time}
	}
	return out
}
