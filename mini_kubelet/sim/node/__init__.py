"""Chapter 5's replay (`replay: node`): one Kubelet with every chapter wired in, on one node.

Upstream: pkg/kubelet/kubelet.go NewMainKubelet and Kubelet.Run (what replay.py wires and runs).
"""
