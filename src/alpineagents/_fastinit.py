"""A faster ``__init__`` for frozen, slotted dataclasses (a private helper of ``alpineagents.types``).

A frozen dataclass sets each field with ``object.__setattr__(self, "name", value)``, which looks the name up on
every call. The ``__init__`` made here has the same signature (positional and keyword-only parameters, defaults,
default factories) and calls ``__post_init__`` the same way, but sets each slot through its descriptor. Values,
``==``, ``hash``, ``repr``, pickling and ``dataclasses.replace`` are unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, FrozenInstanceError, fields
from typing import Any, TypeVar

__all__ = ["fast_init", "shadow", "trusted"]

C = TypeVar("C", bound=type)
T = TypeVar("T")


class _Factory:
    """The default of a parameter whose value comes from a default factory."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<factory>"


_MISSING = _Factory()


def _refuse_set(self: object, name: str, value: object) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _refuse_delete(self: object, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def fast_init(cls: C) -> C:
    """Replace the ``__init__`` of the frozen, slotted dataclass ``cls`` with one that sets slots directly.

    Also gives it the ``__setattr__``/``__delattr__`` of a frozen dataclass: every attribute name (a field, a
    property, an unknown name) raises ``FrozenInstanceError``. The ones ``dataclass(frozen=True, slots=True)``
    generates on Python 3.11 raise ``TypeError: super(type, obj)`` for any name that is not a field.
    """
    cls.__setattr__ = _refuse_set  # type: ignore[method-assign,assignment]
    cls.__delattr__ = _refuse_delete  # type: ignore[method-assign,assignment]
    namespace: dict[str, Any] = {"_MISSING": _MISSING}
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    for number, f in enumerate(fields(cls)):
        if not f.init:  # pragma: no cover - no such field in alpineagents.types
            raise TypeError(f"fast_init does not support init=False fields ({cls.__name__}.{f.name})")
        name = f.name
        namespace[f"_set{number}"] = cls.__dict__[name].__set__
        if f.default is not MISSING:
            namespace[f"_default{number}"] = f.default
            parameter = f"{name}=_default{number}"
        elif f.default_factory is not MISSING:
            namespace[f"_factory{number}"] = f.default_factory
            parameter = f"{name}=_MISSING"
            body.append(f"if {name} is _MISSING: {name} = _factory{number}()")
        else:
            parameter = name
        (keyword if f.kw_only else positional).append(parameter)
        body.append(f"_set{number}(self, {name})")
    if hasattr(cls, "__post_init__"):
        body.append("self.__post_init__()")
    parameters = ["self", *positional]
    if keyword:
        parameters += ["*", *keyword]
    source = f"def __init__({', '.join(parameters)}):\n" + "".join(f"    {line}\n" for line in body)
    exec(source, namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = cls.__init__.__doc__
    init.__annotations__ = dict(cls.__init__.__annotations__)
    cls.__init__ = init  # type: ignore[misc]
    return cls


def shadow(cls: type) -> type | None:
    """A plain class with the same slots as the frozen, slotted dataclass ``cls``, or ``None`` when its layout does
    not allow it (a base other than ``object``, or slots that are not exactly the fields, in order).

    Its instances take attribute assignment at full speed and then become ``cls`` instances by assigning
    ``obj.__class__ = cls`` (the layouts are the same). For trusted makers only: ``__post_init__`` does not run.
    """
    names = tuple(f.name for f in fields(cls))  # pyright: ignore[reportArgumentType]
    if cls.__bases__ != (object,) or cls.__dict__.get("__slots__") != names:
        return None
    made = type(f"_{cls.__name__}Shadow", (), {"__slots__": names, "__module__": cls.__module__})
    probe = object.__new__(made)
    try:
        probe.__class__ = cls  # pyright: ignore[reportAttributeAccessIssue]
    except TypeError:  # pragma: no cover - a layout CPython will not swap
        return None
    return made


def trusted(cls: type[T]) -> Callable[..., T]:
    """A maker of ``cls`` instances from every field value in field order, without ``__post_init__``.

    Only for values whose fields are already in their normalized form (what ``__post_init__`` would leave as
    is): the history reader after its own checks, and the replay of entries that were built normally.
    """
    names = [f.name for f in fields(cls)]  # pyright: ignore[reportArgumentType]
    made = shadow(cls)
    namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls, "_shadow": made}
    if made is not None:
        body = ["self = _new(_shadow)", *(f"self.{name} = {name}" for name in names), "self.__class__ = _cls"]
    else:  # pragma: no cover - every class of alpineagents.types has a shadow
        body = ["self = _new(_cls)"]
        for number, name in enumerate(names):
            namespace[f"_set{number}"] = cls.__dict__[name].__set__
            body.append(f"_set{number}(self, {name})")
    body.append("return self")
    source = f"def make({', '.join(names)}):\n" + "".join(f"    {line}\n" for line in body)
    exec(source, namespace)
    make = namespace["make"]
    make.__qualname__ = f"{cls.__qualname__}._trusted"
    make.__module__ = cls.__module__
    return make
