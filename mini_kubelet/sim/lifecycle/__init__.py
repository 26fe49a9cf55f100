"""Chapter 1's replay (`replay: lifecycle`): a kubelet and the API server, one second at a time, as Pods land and end.

Upstream: pkg/kubelet/kubelet.go Kubelet.Run (the loop replay.py replays).
"""
