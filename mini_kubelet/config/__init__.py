"""Pod sources and their merge into one stream of pod updates.

Upstream: pkg/kubelet/config/ (config.go: PodConfig and podStorage; file.go: the static pod directory;
apiserver.go: the API server's pods for this node; common.go: static pod defaults; sources.go: SourcesReady).
"""
