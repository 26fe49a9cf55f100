"""Pod status: the conditions the kubelet computes for a Pod.

Upstream: pkg/kubelet/status/ (generate.go; the status manager is not modelled here)
"""
