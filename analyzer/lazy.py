"""Names of a package loaded on first use (PEP 562), so that a command pays for the modules it
uses and no more: `import analyzer.store` costs nothing until one of its names is asked for
(`analyzer --help` then never loads SQLAlchemy, pandas or Plotly).

A package lists where each of its public names lives and gives `__getattr__` to Python:

    __getattr__ = lazy_names(__name__, {".db": ("open_db", "DB_ENV"), ".kinds": ("RunStatus",)})

and imports the same names under `if TYPE_CHECKING:` for the type checker
(`tests/test_project.py` checks that the two lists and `__all__` agree).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from typing import Any


class lazy_names:  # noqa: N801 - used as a function: `__getattr__ = lazy_names(...)`
    """The `__getattr__` of `package`: each name of `where` (`{module: names}`, a module
    relative to the package or absolute) imported from its module when first asked for, then
    kept in the package like any other name; a name that the module does not have, but is its
    own (`{".bpe": ("bpe",)}`), is that module. `names` says where each name comes from.

    >>> getattr_ = lazy_names("analyzer", {"analyzer.errors": ("Invalid", "Busy")})
    >>> getattr_("Invalid").__name__, getattr_.names["Busy"]
    ('Invalid', 'analyzer.errors')
    >>> getattr_("nothing")
    Traceback (most recent call last):
    AttributeError: module 'analyzer' has no attribute 'nothing'
    """

    def __init__(self, package: str, where: Mapping[str, tuple[str, ...]]):
        self.package = package
        self.names = {name: module for module, names in where.items() for name in names}
        """{name: the module it comes from}"""

    def __call__(self, name: str) -> Any:
        if name not in self.names:
            raise AttributeError(f"module {self.package!r} has no attribute {name!r}")
        module = importlib.import_module(self.names[name], self.package)
        value = getattr(module, name) if hasattr(module, name) else module  # ".bpe": ("bpe",)
        setattr(sys.modules[self.package], name, value)
        return value
