"""How to install this library, written once for every message that names an extra.

The distribution is named `alpineloop` (the import name is `alpineagents`). The package index has a different,
older project named `alpineagents`, so no message ever says `pip install alpineagents...`: it would install that
project instead. Until a release is published, this library is installed from its clone (`pip install -e .`) or
from a wheel built there (`python -m build` or `pip wheel .`).
"""

from __future__ import annotations

__all__ = ["DISTRIBUTION", "install_hint"]

DISTRIBUTION = "alpineloop"
"""The name of this library's distribution (what pip installs); the import name stays `alpineagents`."""


def install_hint(extra: str) -> str:
    """The command that installs `extra`, from a clone or from a built wheel.

    Example:
        `install_hint("viewer")` gives
        `pip install -e '.[viewer]' in the library's clone (or pip install './alpineloop-VERSION-py3-none-any.whl[viewer]')`
    """
    wheel = f"./{DISTRIBUTION}-VERSION-py3-none-any.whl[{extra}]"
    return f"pip install -e '.[{extra}]' in the library's clone (or pip install '{wheel}')"
