"""Token usage, its running sum and prices (a private part of ``alpineagents.types``).

Import ``Usage`` and ``Price`` from ``alpineagents.types``: it re-exports them, and they present themselves as its
own. ``UsageTotal`` is the fold's running sum; it holds the one rule for adding usages.
"""

from __future__ import annotations

from alpineagents._values.construct import maker, value

__all__ = ["Price", "Usage", "UsageTotal"]


@value
class Usage:
    """Token usage, with the same meanings for every provider.

    Total input is ``input_tokens + cache_read_tokens + cache_write_tokens``. ``a + b`` adds the counts; its
    ``cost`` is the other side's when one side has no requests, and ``None`` when both have requests and either
    cost is unknown. Sum with a start value: ``sum(usages, Usage())``.
    """

    input_tokens: int = 0
    """Input tokens that did not go through the cache."""
    output_tokens: int = 0
    """Output tokens."""
    cache_read_tokens: int = 0
    """Input tokens read from the cache."""
    cache_write_tokens: int = 0
    """Input tokens newly written to the cache."""
    requests: int = 0
    """The number of model requests counted."""
    cost: float | None = None
    """Estimated dollars. ``None`` when the price is unknown, which is different from ``0``."""

    def __add__(self, other: Usage) -> Usage:
        if type(other) is not Usage:
            return NotImplemented
        total = UsageTotal(self)
        total.add(other)
        return total.value()

    @property
    def cache_hit_rate(self) -> float | None:
        """The fraction of total input read from the cache, or ``None`` when there is no input."""
        total = self.input_tokens + self.cache_read_tokens + self.cache_write_tokens
        if total == 0:
            return None
        return self.cache_read_tokens / total


_make_usage = maker(Usage)  # Usage(...) from all six fields in order (one per recorded reply)


class UsageTotal:
    """A running sum of usages, changed in place: the one rule for adding two usages (``Usage.__add__`` uses it).

    The counts add up; the cost is the other side's when one side has no requests, and ``None`` when both have
    requests and either cost is unknown. ``value()`` is the ``Usage`` of the sum so far, built once after each
    change. The fold keeps one per State: a reply's usage then costs five additions, not a new ``Usage`` (replaying
    a 2,400-entry history adds 800 of them).
    """

    __slots__ = (
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "requests",
        "cost",
        "_value",
    )

    def __init__(self, start: Usage) -> None:
        self.input_tokens = start.input_tokens
        self.output_tokens = start.output_tokens
        self.cache_read_tokens = start.cache_read_tokens
        self.cache_write_tokens = start.cache_write_tokens
        self.requests = start.requests
        self.cost = start.cost
        self._value: Usage | None = start

    def add(self, other: Usage) -> None:
        """Add ``other`` to the sum."""
        if self.requests == 0:
            self.cost = other.cost
        elif other.requests == 0:
            pass
        elif self.cost is None or other.cost is None:
            self.cost = None
        else:
            self.cost = self.cost + other.cost
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_read_tokens += other.cache_read_tokens
        self.cache_write_tokens += other.cache_write_tokens
        self.requests += other.requests
        self._value = None

    def value(self) -> Usage:
        """The sum so far, as a ``Usage``."""
        found = self._value
        if found is None:
            found = self._value = _make_usage(
                self.input_tokens,
                self.output_tokens,
                self.cache_read_tokens,
                self.cache_write_tokens,
                self.requests,
                self.cost,
            )
        return found


@value
class Price:
    """Dollars per million tokens. Cache prices left as ``None`` use the input price.

    Example:
        ``Anthropic("claude-sonnet-5", price=Price(input=3, output=15, cache_read=0.3))``
    """

    input: float
    """Dollars per million input tokens that did not go through the cache."""
    output: float
    """Dollars per million output tokens."""
    cache_read: float | None = None
    """Dollars per million tokens read from the cache. ``None`` uses ``input``."""
    cache_write: float | None = None
    """Dollars per million tokens written to the cache. ``None`` uses ``input``."""

    def cost(self, usage: Usage) -> float:
        """The dollars ``usage`` costs at this price (its ``requests`` and ``cost`` are ignored)."""
        cache_read = self.input if self.cache_read is None else self.cache_read
        cache_write = self.input if self.cache_write is None else self.cache_write
        return (
            usage.input_tokens * self.input
            + usage.output_tokens * self.output
            + usage.cache_read_tokens * cache_read
            + usage.cache_write_tokens * cache_write
        ) / 1_000_000
