// What both sides of the differential harness share: the request loop and the feature-gate setting.
module upstream-jsonserve

go 1.22

require (
	k8s.io/apiserver v0.27.7
	k8s.io/component-base v0.27.7
)
