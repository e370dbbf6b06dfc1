"""Prompts: questions agents are asked often, written as the tool calls that answer them well
(comparisons read through beyond_noise, with the methodology at hand). Each prompt's calls are
data (`calls`), rendered into its text, so a test can make every call it recommends."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from typing import Any

import mcp_types as types

from connectors.mcp.resources import METHODOLOGY_URI, PLAN_URI

Call = tuple[str, dict[str, Any]]  # (tool, arguments)

READING = (f"Read the resource {METHODOLOGY_URI} first (what the noise is, what beyond_noise means). Report as "
           "changes only those whose change.<measure>.beyond_noise is true, with the current value, the previous "
           "value and the change in per cent; list the others as within noise, never as rises or falls. Say "
           "which as_of the numbers end at, and that every number is an estimate.")


@dataclasses.dataclass(frozen=True)
class PromptSpec:
    prompt: types.Prompt
    choices: Mapping[str, tuple[str, ...]]  # accepted values of each argument (the first is the default)
    calls: Callable[[Mapping[str, str]], list[Call]]
    ask: Callable[[Mapping[str, str]], str]  # the question, before the calls
    close: str  # after the calls and READING

    def arguments(self, given: Mapping[str, str] | None) -> dict[str, str]:
        """The arguments with their defaults; ValueError naming the one that is not accepted."""
        given = {k: v for k, v in (given or {}).items() if v not in (None, "")}
        unknown = sorted(set(given) - set(self.choices))
        if unknown:
            raise ValueError(f"unknown argument(s) {', '.join(unknown)}; {self.prompt.name} takes "
                             f"{', '.join(self.choices)}")
        for name, value in given.items():
            if value not in self.choices[name]:
                raise ValueError(f"{name}: {value!r} is not one of {', '.join(self.choices[name])}")
        return {name: given.get(name, values[0]) for name, values in self.choices.items()}

    def text(self, arguments: Mapping[str, str]) -> str:
        lines = [self.ask(arguments), "", "Calls:"]
        lines += [f"- {tool} {json.dumps(args)}" for tool, args in self.calls(arguments)]
        return "\n".join([*lines, "", READING, self.close])


_BRIEF_CALLS = {
    "keywords": ("signals_top_keywords", {"window": "7d", "limit": 25, "compare": "previous_period"}),
    "countries": ("signals_geo_heat", {"window": "7d", "level": "country", "compare": "previous_period"}),
    "domains": ("signals_query", {"window": "7d", "group_by": ["domain"], "compare": "previous_period", "limit": 25}),
}
_TRENDING_DIMENSION = {"keywords": "keyword", "countries": "keyword", "domains": "domain"}
WINDOWS = ("24h", "1h", "6h", "12h", "7d", "30d")
COMPARE_TOOLS = ("signals_top_keywords", "signals_geo_heat", "signals_keyword_activity", "signals_query")


def _compare_call(arguments: Mapping[str, str]) -> Call:
    tool, window = arguments["tool"], arguments["window"]
    args: dict[str, Any] = {"window": window, "compare": "previous_period", "intervals": True}
    if tool == "signals_query":
        args["group_by"] = ["keyword"]
    return tool, args


PROMPTS: dict[str, PromptSpec] = {spec.prompt.name: spec for spec in (
    PromptSpec(
        types.Prompt(name="weekly_brief", title="Weekly brief: what changed beyond noise in the last 7 days",
                     description="The last 7 days against the 7 before, changes beyond noise only.",
                     arguments=[types.PromptArgument(name="focus", required=False,
                                                     description="keywords (default), countries, or domains "
                                                                 "(domains: Analyst plan and above)")]),
        {"focus": tuple(_BRIEF_CALLS)},
        lambda a: [_BRIEF_CALLS[a["focus"]],
                   ("signals_trending", {"window": "7d", "dimension": _TRENDING_DIMENSION[a["focus"]], "limit": 10})],
        lambda a: f"Weekly brief: what changed beyond noise in the last 7 days, by {a['focus']}.",
        "End with at most five bullet points a busy reader needs."),
    PromptSpec(
        types.Prompt(name="compare_periods", title="Compare a window with the one before",
                     description="A tool's numbers beside the previous period's, with intervals.",
                     arguments=[types.PromptArgument(name="window", required=False,
                                                     description="24h (default), 1h, 6h, 12h, 7d or 30d"),
                                types.PromptArgument(name="tool", required=False,
                                                     description="signals_top_keywords (default), signals_geo_heat, "
                                                                 "signals_keyword_activity or signals_query")]),
        {"window": WINDOWS, "tool": COMPARE_TOOLS},
        lambda a: [_compare_call(a)],
        lambda a: (f"Compare the last {a['window']} with the {a['window']} before it "
                   f"(check in {PLAN_URI} that your plan has {a['tool']})."),
        "Where an interval is wide (a small count), say the number is rough."),
)}


def get_prompt(name: str, arguments: Mapping[str, str] | None) -> types.GetPromptResult:
    """The prompt's messages; ValueError for an unknown prompt or argument."""
    spec = PROMPTS.get(name)
    if spec is None:
        raise ValueError(f"There is no prompt {name!r}. Prompts: {', '.join(PROMPTS)}.")
    text = spec.text(spec.arguments(arguments))
    return types.GetPromptResult(description=spec.prompt.description,
                                 messages=[types.PromptMessage(role="user",
                                                               content=types.TextContent(type="text", text=text))])
