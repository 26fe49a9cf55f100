"""Which pod sources the kubelet has heard from: housekeeping and deletions wait until all are ready.

Upstream: pkg/kubelet/config/sources.go (SourcesReady)
"""

from __future__ import annotations

from typing import Callable


class SourcesReady:
    """The sources seen by the sync loop, and the test of readiness (PodConfig.SeenAllSources).

    Upstream: pkg/kubelet/config/sources.go sourcesImpl (NewSourcesReady)
    """

    def __init__(self, sources_ready_fn: Callable[[set[str]], bool]):
        self.sources_seen: set[str] = set()
        self.sources_ready_fn = sources_ready_fn

    def add_source(self, source: str) -> None:
        """Upstream: sourcesImpl.AddSource"""
        self.sources_seen.add(source)

    def all_ready(self) -> bool:
        """Upstream: sourcesImpl.AllReady"""
        return self.sources_ready_fn(self.sources_seen)
