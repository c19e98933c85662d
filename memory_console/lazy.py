"""Package names that load on first use, so importing one light module of a package does not
import every heavy one beside it (numpy, the Store, the passes)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def names_from(
    package: str, homes: Mapping[str, tuple[str, ...]], namespace: dict[str, Any]
) -> Callable[[str], Any]:
    """A module `__getattr__` for `package`: a name of `homes` (module -> names) is imported
    from its module on first use and kept in `namespace` (the package's globals), so later
    lookups do not come here again."""
    module_of = {name: module for module, names in homes.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    return __getattr__
