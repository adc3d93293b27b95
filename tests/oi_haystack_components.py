"""Haystack components of the test app (tests/oi_apps.py), at module level.

The Haystack instrumentor wraps each component class by its import path, so a
component defined inside a function could not be traced.
"""

from __future__ import annotations

from typing import Any

from haystack import Document, component


@component
class Keep:
    """The app's filter between retriever and prompt (a scenario may make it drop the support)."""

    def __init__(self, scenario: Any) -> None:
        self.scenario = scenario

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, Any]:
        return {"documents": [d for d in documents if self.scenario.keep(d.content or "")]}


@component
class ScriptedGenerator:
    """Stands in for a hosted model: answers what the scenario scripts, reading the labels off the prompt."""

    def __init__(self, scenario: Any) -> None:
        self.scenario = scenario

    @component.output_types(replies=list[str])
    def run(self, prompt: str) -> dict[str, Any]:
        return {"replies": [self.scenario.say(prompt)]}
