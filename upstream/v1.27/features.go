package main

// FeatureGateSpecs: every gate the kubelet's global feature gate knows, with its default, stage and lock,
// as this release registers them (pkg/features' init adds the kubelet's gates to it). No gate is set.

import (
	"encoding/json"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	_ "k8s.io/kubernetes/pkg/features"
)

func init() { handlers["FeatureGateSpecs"] = featureGateSpecs }

func featureGateSpecs(json.RawMessage) (any, error) {
	specs := map[string]map[string]any{}
	for name, spec := range utilfeature.DefaultMutableFeatureGate.GetAll() {
		specs[string(name)] = map[string]any{
			"default":    spec.Default,
			"preRelease": string(spec.PreRelease),
			"locked":     spec.LockToDefault,
			"enabled":    utilfeature.DefaultFeatureGate.Enabled(name),
		}
	}
	return specs, nil
}
