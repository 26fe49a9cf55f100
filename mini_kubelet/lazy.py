"""A package's names loaded from their modules when first asked for (PEP 562 __getattr__). Upstream: none (Go links
every package at build time; here it keeps the Kubernetes client off the paths that read and refuse bad input)."""

from __future__ import annotations

import importlib
from typing import Callable


def lazy_getattr(package: str, namespace: dict, names: dict[str, str]) -> Callable[[str], object]:
    """The package's __getattr__: `names` maps a submodule to the space-separated names it gives the package."""
    module_of = {name: module for module, listed in names.items() for name in listed.split()}

    def __getattr__(name: str):
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = namespace[name] = getattr(importlib.import_module(f"{package}.{module}"), name)
        return value
    return __getattr__
