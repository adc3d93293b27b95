"""Finding judges by name: the built-in ones, then the ``citeline.judges`` entry point group.

A plug-in registers a factory (a class or a function taking keyword options
and returning a judge)::

    [project.entry-points."citeline.judges"]
    my-judge = "my_package.judges:MyJudge"
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from typing import Any, cast

from citeline.analyzer.judges._api import Judge

GROUP = "citeline.judges"
_BUILTIN = {
    "rules": "citeline.analyzer.judges._rules:RulesJudge",
    "llm": "citeline.analyzer.judges._llm:LLMJudge",
    "nli": "citeline.analyzer.judges._nli:NLIJudge",
    "ensemble": "citeline.analyzer.judges._ensemble:EnsembleJudge",
}


class JudgeNotFound(LookupError):
    pass


def available() -> dict[str, str]:
    """Every judge that can be loaded, name -> where it comes from (built-ins first)."""
    found = dict(_BUILTIN)
    for ep in entry_points(group=GROUP):
        found.setdefault(ep.name, ep.value)
    return found


def _factory(name: str) -> Callable[..., Any]:
    target = available().get(name)
    if target is None:
        raise JudgeNotFound(f"no judge named {name!r}; installed: {', '.join(sorted(available()))}")
    module, _, attr = target.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return cast(Callable[..., Any], obj)


def load(name: str, **options: Any) -> Judge:
    """The judge called ``name``, built with ``options`` (strings from the command line are converted by the judge)."""
    factory = _factory(name)
    params: Mapping[str, inspect.Parameter]
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        params = {}
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    unknown = [k for k in options if k not in params and not takes_any]
    if unknown:
        known = [k for k, p in params.items() if p.kind is not inspect.Parameter.VAR_POSITIONAL and k != "self"]
        raise ValueError(
            f"judge {name!r} has no option {', '.join(map(repr, unknown))}; its options: {', '.join(known) or 'none'}"
        )
    judge = factory(**options)
    missing = [a for a in ("name", "version", "judge", "judge_many", "settings") if not hasattr(judge, a)]
    if missing:
        raise TypeError(f"judge {name!r} ({available()[name]}) lacks {', '.join(missing)}")
    return cast(Judge, judge)
