"""Custom scorers: your functions, named `module:function`, `file.py:function` or by entry point.

A custom scorer is called as `scorer(output, expect)` with the parsed output (a dict) and the
expect.json object, like the scorers of the seed document, and returns `(passed, reason)`, a
bool, a `PropertyResult`, or a list of them. An exception inside it, or a return value of
another shape, is a failing result that says so; it never stops the other properties.
"""

from __future__ import annotations

from agentledger.errors import InputError
from agentledger.scoring.base import PropertyResult

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

ENTRY_POINT_GROUP = "agentledger.scorers"
"""Entry point group under which installed packages can offer scorers by name."""


def load_custom_scorer(spec: str, source: str) -> Callable[..., Any]:
    """The scorer named by `spec`: `package.module:function`, `path/file.py:function` (relative
    to the directory of `source`), or the name of an `agentledger.scorers` entry point.

    Raises InputError naming `source` and `spec` when it cannot be imported or is not callable.
    """
    import importlib

    spec = spec.strip()
    module_name, colon, attr = spec.rpartition(":")
    if not colon:
        return _entry_point(spec, source)
    if not module_name or not attr:
        raise InputError(f"{source}: custom scorer {spec!r}: expected 'module:function'")
    try:
        if module_name.endswith(".py"):
            module = _load_file(module_name, source)
        else:
            module = importlib.import_module(module_name)
    except InputError:
        raise
    except Exception as exc:
        raise InputError(
            f"{source}: custom scorer {spec!r}: cannot import {module_name}: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise InputError(f"{source}: custom scorer {spec!r}: {module_name} has no {attr!r}")
        target = getattr(target, part)
    if not callable(target):
        raise InputError(f"{source}: custom scorer {spec!r}: {attr} is not callable")
    return CustomScorer(spec, target)


class CustomScorer:
    """A loaded custom scorer: calls the function, and remembers the spec that named it."""

    __slots__ = ("function", "spec")

    def __init__(self, spec: str, function: Callable[..., Any]) -> None:
        self.spec = spec
        self.function = function

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)

    def __repr__(self) -> str:
        return f"CustomScorer({self.spec!r})"


def _load_file(path_text: str, source: str) -> Any:
    import importlib.util
    import os
    import sys

    path = path_text
    if not os.path.isabs(path):
        path = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(source)), path))
    if not os.path.isfile(path):
        raise InputError(f"{source}: custom scorer file {path} does not exist")
    stamp = (path, os.stat(path).st_mtime_ns)
    if stamp in _file_modules:
        return _file_modules[stamp]
    name = "agentledger_scorer_" + os.path.splitext(os.path.basename(path))[0]
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise InputError(f"{source}: custom scorer file {path} cannot be loaded")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    module_spec.loader.exec_module(module)
    _file_modules[stamp] = module
    return module


_file_modules: dict[tuple[str, int], Any] = {}
"""Scorer files already loaded (path, mtime): a suite's fixtures share one module."""


def _entry_point(name: str, source: str) -> Callable[..., Any]:
    from importlib.metadata import entry_points

    found = [point for point in entry_points(group=ENTRY_POINT_GROUP) if point.name == name]
    if not found:
        raise InputError(
            f"{source}: custom scorer {name!r}: expected 'module:function', 'file.py:function' "
            f"or an installed '{ENTRY_POINT_GROUP}' entry point"
        )
    try:
        function = found[0].load()
    except Exception as exc:
        raise InputError(f"{source}: custom scorer {name!r}: cannot load: {exc}") from exc
    if not callable(function):
        raise InputError(f"{source}: custom scorer {name!r}: the entry point is not callable")
    return CustomScorer(name, function)


def scorer_name(scorer: Callable[..., Any]) -> str:
    """`custom:<spec>` for a loaded scorer, `custom:module:qualname` for any other callable."""
    if isinstance(scorer, CustomScorer):
        return f"custom:{scorer.spec}"
    module = getattr(scorer, "__module__", None) or "?"
    return f"custom:{module}:{getattr(scorer, '__qualname__', type(scorer).__name__)}"


def run_custom(
    scorer: Callable[..., Any], data: dict[str, Any], expect: Mapping[str, Any]
) -> list[PropertyResult]:
    """Run one custom scorer; whatever it does, the answer is a list of results."""
    name = scorer_name(scorer)
    try:
        answer = scorer(data, dict(expect))
    except Exception as exc:
        return [PropertyResult(name, False, f"{name}: raised {type(exc).__name__}: {exc}")]
    if isinstance(answer, PropertyResult):
        return [answer]
    if isinstance(answer, bool):
        return [PropertyResult(name, answer, f"{name}: {'ok' if answer else 'failed'}")]
    if (
        isinstance(answer, tuple)
        and len(answer) == 2
        and isinstance(answer[0], bool)
        and isinstance(answer[1], str)
    ):
        return [PropertyResult(name, answer[0], f"{name}: {answer[1]}")]
    if (
        isinstance(answer, list)
        and answer
        and all(isinstance(item, PropertyResult) for item in answer)
    ):
        return list(answer)
    shown = repr(answer)[:80]
    return [
        PropertyResult(
            name,
            False,
            f"{name}: returned {shown}; expected (bool, reason), a bool or a PropertyResult",
        )
    ]
