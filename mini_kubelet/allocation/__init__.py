"""The allocation manager and its resize admit handler.

Upstream: pkg/kubelet/allocation/
"""
