"""The checks of an eval case: each looks at one finished run (`CaseRun`) and says whether it passed and why.

`Equals`, `Contains`, `Regex` and `JSONSchema` read the run's answer; `CalledTool` its tool calls (with arguments,
when given: the given ones must match, others may be there too); `MaxTurns` and `MaxCost` its turns and cost;
`Judge` asks a Model to grade the answer against a rubric and keeps its verdict and reason. Any callable that
takes a `CaseRun` and returns a bool or a `CheckResult` is a check too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from alpineagents._frozen import thaw
from alpineagents.errors import fix_message
from alpineagents.models.base import Model
from alpineagents.models.resolve import resolve_model
from alpineagents.state import State
from alpineagents.types import Message, ModelReplyEntry, Request, Usage

if TYPE_CHECKING:
    from alpineagents.evals.dataset import Case

__all__ = [
    "CaseRun",
    "CheckResult",
    "Check",
    "Equals",
    "Contains",
    "Regex",
    "JSONSchema",
    "CalledTool",
    "MaxTurns",
    "MaxCost",
    "Judge",
    "JUDGE_SYSTEM",
]


@dataclass(frozen=True)
class CaseRun:
    """One run of a case, as the checks see it: the case, the State it ran in, its answer, the error it ended
    with (`"Type: message"`, or `None`), and how long it took."""

    case: Case
    state: State
    error: str | None
    seconds: float
    judge: Model | None = None

    @property
    def answer(self) -> Any:
        """The run's answer (`state.answer`), JSON values thawed (a dict, a list, a str...)."""
        return thaw(self.state.answer)

    @property
    def text(self) -> str:
        """The answer as text: a string as it is, anything else as JSON (`""` without an answer)."""
        answer = self.answer
        if answer is None:
            return ""
        return answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False, sort_keys=True)


@dataclass(frozen=True)
class CheckResult:
    """What one check said: its name, whether the run passed it, the reason in words, and for a judge its usage
    and verdict."""

    name: str
    passed: bool
    reason: str = ""
    usage: Usage | None = None
    detail: Mapping[str, Any] = field(default_factory=dict[str, Any])

    def to_json(self) -> dict[str, Any]:
        """`{"name", "passed", "reason"}` plus the judge's `detail` when there is one."""
        found: dict[str, Any] = {"name": self.name, "passed": self.passed, "reason": self.reason}
        if self.detail:
            found["detail"] = dict(self.detail)
        return found


class Check:
    """The base of the built-in checks: a `name` and `__call__(run) -> CheckResult`."""

    name = "check"

    def __call__(self, run: CaseRun) -> CheckResult:
        raise NotImplementedError

    def _result(self, passed: bool, reason: str) -> CheckResult:
        return CheckResult(self.name, passed, reason)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _short(value: Any, limit: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(thaw(value), ensure_ascii=False, sort_keys=True)
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


class Equals(Check):
    """The answer equals `expected` (the case's expected output when not given); strings are compared with the
    surrounding whitespace stripped, and an expected value that is not a string is compared with the JSON an
    answer text holds."""

    name = "equals"

    def __init__(self, expected: Any = None) -> None:
        self.expected = expected

    def __call__(self, run: CaseRun) -> CheckResult:
        expected = run.case.expected if self.expected is None else self.expected
        answer = run.answer
        if isinstance(expected, str) and isinstance(answer, str):
            passed = answer.strip() == expected.strip()
        elif isinstance(answer, str):
            try:
                passed = json.loads(answer) == thaw(expected)
            except ValueError:
                passed = False
        else:
            passed = answer == thaw(expected)
        return self._result(passed, "" if passed else f"expected {_short(expected)}, got {_short(answer)}")


class Contains(Check):
    """The answer's text holds `text` (`ignore_case=True` to compare without case)."""

    name = "contains"

    def __init__(self, text: str, *, ignore_case: bool = False) -> None:
        self.text, self.ignore_case = text, ignore_case

    def __call__(self, run: CaseRun) -> CheckResult:
        said, wanted = run.text, self.text
        if self.ignore_case:
            said, wanted = said.lower(), wanted.lower()
        passed = wanted in said
        return self._result(passed, "" if passed else f"{self.text!r} is not in {_short(run.text)}")


class Regex(Check):
    """The answer's text matches the regular expression `pattern` somewhere (`re.search`)."""

    name = "regex"

    def __init__(self, pattern: str) -> None:
        self.pattern = re.compile(pattern)

    def __call__(self, run: CaseRun) -> CheckResult:
        passed = self.pattern.search(run.text) is not None
        return self._result(passed, "" if passed else f"/{self.pattern.pattern}/ does not match {_short(run.text)}")


class JSONSchema(Check):
    """The answer (a structured answer, or a text holding JSON) is valid against the JSON Schema `schema`."""

    name = "json_schema"

    def __init__(self, schema: Mapping[str, Any]) -> None:
        try:
            import jsonschema
        except ImportError:  # pragma: no cover - the evals extra installs it
            raise ImportError(
                "JSONSchema needs the jsonschema package: the evals extra (pip install -e '.[evals]' in the clone)"
            ) from None
        self.schema = dict(schema)
        self._validator = jsonschema.Draft202012Validator(self.schema)

    def __call__(self, run: CaseRun) -> CheckResult:
        answer = run.answer
        if isinstance(answer, str):
            try:
                answer = json.loads(answer)
            except ValueError as error:
                return self._result(False, f"the answer is not JSON ({error})")
        errors = sorted(self._validator.iter_errors(answer), key=lambda error: list(error.path))
        if not errors:
            return self._result(True, "")
        where = "/".join(str(part) for part in errors[0].path) or "the answer"
        return self._result(False, f"{where}: {errors[0].message}")


class CalledTool(Check):
    """The run called the tool `tool` at least once, with `args` among its arguments when given."""

    name = "called"

    def __init__(self, tool: str, args: Mapping[str, Any] | None = None) -> None:
        self.tool, self.args = tool, dict(args or {})

    def __call__(self, run: CaseRun) -> CheckResult:
        calls = [
            call
            for entry in run.state.history
            if isinstance(entry, ModelReplyEntry)
            for call in entry.content.tool_calls
            if call.name == self.tool
        ]
        if any(all(thaw(call.args.get(key)) == value for key, value in self.args.items()) for call in calls):
            return self._result(True, "")
        if not calls:
            return self._result(False, f"{self.tool} was not called")
        seen = "; ".join(_short(call.args, 60) for call in calls)
        return self._result(False, f"{self.tool} was called, but never with {_short(self.args)} (got: {seen})")


class MaxTurns(Check):
    """The run took at most `turns` turns."""

    name = "max_turns"

    def __init__(self, turns: int) -> None:
        self.turns = turns

    def __call__(self, run: CaseRun) -> CheckResult:
        passed = run.state.turn <= self.turns
        return self._result(passed, "" if passed else f"{run.state.turn} turns, more than {self.turns}")


class MaxCost(Check):
    """The run cost at most `dollars` (a run whose cost is unknown fails: give the model a price)."""

    name = "max_cost"

    def __init__(self, dollars: float) -> None:
        self.dollars = dollars

    def __call__(self, run: CaseRun) -> CheckResult:
        cost = run.state.usage.cost
        if cost is None:
            return self._result(False, "the cost is unknown (the model has no price)")
        passed = cost <= self.dollars
        return self._result(passed, "" if passed else f"cost ${cost:.4f}, more than ${self.dollars:.4f}")


JUDGE_SYSTEM = (
    "You grade the answer of an AI agent against a rubric. Reply with one JSON object and nothing else: "
    '{"pass": true or false, "reason": "one or two sentences"}.'
)
"""The system prompt a `Judge` sends."""


class Judge(Check):
    """A Model grades the answer against `rubric`; its verdict (`pass`) and `reason` are kept in the result.

    `model` is a Model or a model string; without one, the `judge=` of `run_evals` grades. The Model gets
    `JUDGE_SYSTEM`, then the rubric, the case's input, its expected output (when there is one) and the answer, and
    must reply `{"pass": true|false, "reason": "..."}`; a reply it cannot read fails the check and says so.
    """

    name = "judge"

    def __init__(self, rubric: str, model: Model | str | None = None) -> None:
        self.rubric = rubric
        self.model = None if model is None else resolve_model(model)

    def prompt(self, run: CaseRun) -> str:
        """The message the judge model reads."""
        parts = [f"Rubric:\n{self.rubric}", f"Task given to the agent:\n{run.case.text}"]
        if run.case.expected is not None:
            parts.append(f"Expected output:\n{_short(run.case.expected, 4000)}")
        parts.append(f"The agent's answer:\n{run.text or '(no answer)'}")
        if run.error:
            parts.append(f"The run ended with an error: {run.error}")
        return "\n\n".join(parts)

    def __call__(self, run: CaseRun) -> CheckResult:
        model = self.model or run.judge
        if model is None:
            raise ValueError(
                fix_message(
                    "a Judge check has no model",
                    "give it one, Judge(rubric, model=...), or pass judge= to run_evals (--judge on the command line)",
                    'run_evals(agent, dataset, judge="anthropic/claude-sonnet-4-5")',
                )
            )
        request = Request(JUDGE_SYSTEM, (Message.user(self.prompt(run)),), tool_choice="none")
        reply = model.respond(request)
        verdict = _verdict(reply.text)
        if verdict is None:
            reason = f"the judge's reply is not a verdict: {_short(reply.text)}"
            return CheckResult(self.name, False, reason, reply.usage, {"reply": reply.text})
        passed, reason = verdict
        return CheckResult(
            self.name, passed, reason, reply.usage, {"verdict": "pass" if passed else "fail", "reason": reason}
        )


def _verdict(text: str) -> tuple[bool, str] | None:
    """`(passed, reason)` from a judge's reply: the JSON object it holds (`{"pass": bool, "reason": str}`)."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        found = json.loads(text[start : end + 1])
    except ValueError:
        return None
    if not isinstance(found, dict) or not isinstance(found.get("pass"), bool):
        return None
    reason = found.get("reason")
    return found["pass"], reason if isinstance(reason, str) else ""


class _Function(Check):
    def __init__(self, function: Callable[[CaseRun], Any]) -> None:
        self.function = function
        self.name = getattr(function, "__name__", "check")

    def __call__(self, run: CaseRun) -> CheckResult:
        found = self.function(run)
        if isinstance(found, CheckResult):
            return found
        return self._result(bool(found), "" if found else f"{self.name} returned {found!r}")


def as_check(item: Check | Callable[[CaseRun], Any]) -> Check:
    """`item` as a `Check` (a callable becomes one named after it)."""
    if isinstance(item, Check):
        return item
    if callable(item):
        return _Function(item)
    raise TypeError(
        fix_message(
            f"checks= takes Check objects or functions of a CaseRun (got: {item!r})",
            "use a built-in check, or a function that returns True when the run passed",
            'Case("What is 2+2?", checks=[Contains("4"), lambda run: run.state.turn <= 2])',
        )
    )
