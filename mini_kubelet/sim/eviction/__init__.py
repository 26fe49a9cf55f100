"""Chapter 4's replay (`replay: eviction`): a node under pressure, the eviction manager's passes on the virtual clock.

Upstream: pkg/kubelet/eviction/eviction_manager.go managerImpl.Start (the loop replay.py replays).
"""
