"""How a value class is declared, the one fast way to build a value from its fields, and a value's JSON from them.

``@value`` (or ``@value(kw_only=True)``) declares a frozen, slotted dataclass, and gives it two things the plain
decorator does not:

- every attribute change (of a field, a property, a method or an unknown name) raises ``FrozenInstanceError``,
  "cannot assign to field 'x'" or "cannot delete field 'x'". On Python 3.11 the methods that
  ``dataclass(frozen=True, slots=True)`` writes raise ``TypeError: super(type, obj)`` for any name that is not a
  field;
- an ``__init__`` with the same signature, defaults and ``__post_init__`` call that sets each slot through its
  descriptor, instead of ``object.__setattr__(self, "name", value)``, which looks the name up on every call.

``maker(cls)`` is a function that takes every field of ``cls`` in field order, positionally, and returns
``cls(*values)``. It makes the object as a plain class with the same slots (``__slots__`` assignment runs at full
speed there), turns it into a ``cls`` instance by setting ``__class__`` (the layouts are the same), then runs the
class's ``__post_init__``, so its result is always the value the class would build: a ``Message`` content given as
a string is refused exactly as ``Message("user", "hi")`` refuses it. A class whose ``__post_init__`` only brings
fields into normal form may say, in ``__normal_types__`` (``{"content": (tuple,)}``), the exact types for which it
has nothing to do: its maker then skips the call when every named field has one of them (a check in the maker's
own code instead of a call; about an eighth of replaying a history, measured in instructions). Every user makes its makers once, at import:
``make_message = maker(Message)``.

What each part buys, measured against the same tree without it (CPU time, Python 3.11, on the shared 2-core build
machine; ``benchmarks/fold.py`` and a load of its 2,400-entry State):

- ``maker``: a history entry in 0.36-0.54 µs against 1.2-2.0 µs for its class called with keywords (a ``ToolCall``
  0.39 against 1.6, a ``Message`` 0.40 against 0.52). The State records a turn with six makers (request, reply and
  result entries; the assistant message, result block and user message the fold adds), and a load builds about
  five values per entry. Without makers: recording 4.6 -> 6.5 µs per entry (its target is 5), ``State(history=...)``
  of 2,400 entries 4.0-4.9 -> 6.5-7.2 ms, a FileStore load of that State 23-24 -> 31-34 ms.
- the ``__init__`` of ``@value``: a history entry built with keywords in 1.2-2.0 µs against 1.5-2.8 µs with the
  dataclass's own (a ``Usage`` 0.59 against 1.03): ``fold.py``'s reference figure, 1.44 µs, is 2.0-3.3 µs without
  it. Values built in code (adapters, tools, loops) use it; no per-turn figure of the benchmarks depends on it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, FrozenInstanceError, dataclass, field, fields
from typing import TYPE_CHECKING, Any, TypeVar, dataclass_transform, overload

from alpineagents._frozen import freeze, thaw

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = ["as_tuples", "freeze_fields", "fields_json", "maker", "value"]

C = TypeVar("C", bound=type)
T = TypeVar("T")


def _refuse_set(self: object, name: str, value: object) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _refuse_delete(self: object, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


class _Factory:
    """The default of a parameter whose value comes from a default factory."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


def _compile(name: str, parameters: list[str], body: list[str], namespace: dict[str, Any], cls: type) -> Any:
    source = f"def {name}({', '.join(parameters)}):\n" + "".join(f"    {line}\n" for line in body)
    exec(source, namespace)  # noqa: S102 - the source is made above from the field names of a class
    function = namespace[name]
    function.__module__ = cls.__module__
    return function


def _fast_init(cls: type) -> None:
    """Replace the ``__init__`` of the frozen, slotted dataclass ``cls`` with one that sets slots directly."""
    namespace: dict[str, Any] = {"_FACTORY": _FACTORY}
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    for number, f in enumerate(fields(cls)):
        name = f.name
        # The slot's descriptor: on the class, or on the value class it extends (an inherited field).
        namespace[f"_set{number}"] = next(k.__dict__[name] for k in cls.__mro__ if name in k.__dict__).__set__
        if f.default is not MISSING:
            namespace[f"_default{number}"] = f.default
            parameter = f"{name}=_default{number}"
        elif f.default_factory is not MISSING:
            namespace[f"_factory{number}"] = f.default_factory
            parameter = f"{name}=_FACTORY"
            body.append(f"if {name} is _FACTORY: {name} = _factory{number}()")
        else:
            parameter = name
        (keyword if f.kw_only else positional).append(parameter)
        body.append(f"_set{number}(self, {name})")
    if hasattr(cls, "__post_init__"):
        body.append("self.__post_init__()")
    parameters = ["self", *positional, *(["*", *keyword] if keyword else [])]
    init = _compile("__init__", parameters, body, namespace, cls)
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = cls.__init__.__doc__
    init.__annotations__ = dict(cls.__init__.__annotations__)
    cls.__init__ = init  # type: ignore[misc]


@overload
def value(cls: C, /) -> C: ...
@overload
def value(*, kw_only: bool = False) -> Callable[[C], C]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def value(cls: type | None = None, /, *, kw_only: bool = False) -> Any:
    """Declare ``cls`` a frozen, slotted dataclass that refuses every attribute change (see the module)."""

    def declare(cls: type) -> type:
        made = dataclass(frozen=True, slots=True, kw_only=kw_only)(cls)
        made.__setattr__ = _refuse_set  # type: ignore[method-assign,assignment]
        made.__delattr__ = _refuse_delete  # type: ignore[method-assign,assignment]
        _fast_init(made)
        return made

    return declare if cls is None else declare(cls)


_set = object.__setattr__


def as_tuples(obj: object, *names: str) -> None:
    """In a ``__post_init__``: make each named field a tuple (a list or any other iterable is copied into one)."""
    for name in names:
        current = getattr(obj, name)
        if type(current) is not tuple:
            _set(obj, name, tuple(current))


def freeze_fields(obj: object, *names: str) -> None:
    """In a ``__post_init__``: deep-freeze each named JSON field with ``freeze`` (a frozen value is kept as is)."""
    for name in names:
        current = getattr(obj, name)
        frozen = freeze(current)
        if frozen is not current:
            _set(obj, name, frozen)


def fields_json(obj: DataclassInstance) -> dict[str, Any]:
    """The fields of the dataclass instance ``obj`` by name, in field order, each as plain JSON (``thaw``: a tuple
    or frozen list becomes a list, a mapping a dict): the ``to_json`` of a value that is exactly its fields."""
    return {item.name: thaw(getattr(obj, item.name)) for item in fields(obj)}


_makers: dict[type, Callable[..., Any]] = {}


def maker(cls: type[T]) -> Callable[..., T]:
    """The maker of ``cls`` values from every field, in field order (see the module). One per class, shared.

    Raises:
        TypeError: ``cls`` is not a class declared with ``@value``.
    """
    made = _makers.get(cls)
    if made is None:
        made = _makers[cls] = _new_maker(cls)
    return made


def _new_maker(cls: type) -> Callable[..., Any]:
    names = tuple(f.name for f in fields(cls))
    if cls.__bases__ != (object,) or cls.__dict__.get("__slots__") != names:
        raise TypeError(f"{cls.__qualname__} is not a value class declared with @value")
    shadow = type(f"_{cls.__name__}Shadow", (), {"__slots__": names, "__module__": cls.__module__})
    namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls, "_shadow": shadow}
    body = ["self = _new(_shadow)", *(f"self.{name} = {name}" for name in names), "self.__class__ = _cls"]
    post_init = cls.__dict__.get("__post_init__")
    if post_init is not None:
        namespace["_post_init"] = post_init
        normal: dict[str, tuple[type, ...]] = cls.__dict__.get("__normal_types__") or {}
        checks = []
        for index, (name, kinds) in enumerate(normal.items()):
            namespace[f"_normal{index}"] = frozenset(kinds)
            checks.append(f"type({name}) not in _normal{index}")
        body.append(f"if {' or '.join(checks)}: _post_init(self)" if checks else "_post_init(self)")
    body.append("return self")
    make = _compile("make", list(names), body, namespace, cls)
    make.__qualname__ = f"maker({cls.__qualname__})"
    return make
