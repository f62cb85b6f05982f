"""Read-only JSON containers: ``FrozenDict``, ``FrozenList``, ``freeze`` and ``thaw``.

Values recorded in a State's history must never change. These ``dict``/``list`` subclasses read, compare, print
and ``json.dumps`` exactly like the plain containers, are frozen at every level, and raise ``TypeError`` on every
change. Operations that make a new value (``d | x``, ``d.copy()``, ``x[a:b]``, ``x + y``) return plain containers.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any, NoReturn, SupportsIndex, TypeVar

from alpineagents.errors import fix_message

__all__ = ["FrozenDict", "FrozenList", "JSON", "freeze", "thaw"]

JSON = None | bool | int | float | str | list[Any] | dict[str, Any]
"""A JSON value. Frozen containers are ``dict``/``list`` subclasses, so they fit too."""

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")

_FIX = (
    "make a plain copy and change that: {plain}(value) copies the top level, and json.loads(json.dumps(value)) "
    "copies every level. A State's extra_data is changed with state.edit_extra_data()"
)
_EXAMPLE = "with state.edit_extra_data() as data:\n    data['notes'] = ['checked b.py']"


def _read_only(container: str, operation: str) -> NoReturn:
    plain = "dict" if container == "FrozenDict" else "list"
    raise TypeError(
        fix_message(
            f"this {container} is read-only (it was recorded in a State's history), so {operation} is not allowed",
            _FIX.format(plain=plain),
            _EXAMPLE,
        )
    )


_dict_new = dict.__new__
_dict_init = dict.__init__
_dict_update = dict.update
_dict_setitem = dict.__setitem__
_dict_items = dict.items
_dict_values = dict.values
_list_new = list.__new__
_list_extend = list.extend


def _merged(first: dict[Any, Any], second: dict[Any, Any]) -> dict[Any, Any]:
    """``first | second`` as a plain dict: the result of ``|`` on a frozen dict is editable."""
    result = dict(first)
    result.update(second)
    return result


def _freeze_values(d: dict[Any, Any]) -> None:
    """Freeze, in place, the values of a dict being built (``d`` is not shared yet)."""
    for value in _dict_values(d):
        if type(value) not in _ATOMIC:
            break
    else:
        return
    changed = [(k, freeze(v)) for k, v in _dict_items(d) if type(v) not in _ATOMIC]
    for key, frozen in changed:
        _dict_setitem(d, key, frozen)


class FrozenDict(dict[K, V]):
    """A read-only ``dict``, frozen at every level (nested dicts are ``FrozenDict``, lists ``FrozenList``).

    Built like ``dict(...)``. Unhashable, equal to the plain dict, printed like it; every change raises
    ``TypeError``. ``dict(value)`` or ``thaw(value)`` gives an editable copy.
    """

    __slots__ = ()

    def __new__(cls, *args: Any, **kwargs: Any) -> FrozenDict[K, V]:
        self = _dict_new(cls)
        _dict_init(self, *args, **kwargs)
        _freeze_values(self)
        return self

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """Everything is done by ``__new__``, so calling ``__init__`` again changes nothing."""

    @classmethod
    def fromkeys(cls, iterable: Iterable[Any], value: object = None, /) -> FrozenDict[Any, Any]:  # type: ignore[override]
        """A ``FrozenDict`` with the keys of ``iterable``, each mapped to ``value``."""
        return cls(dict.fromkeys(iterable, value))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return dict.__repr__(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (dict(self),))

    def __copy__(self) -> FrozenDict[K, V]:
        return type(self)(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenDict[K, V]:
        return type(self)({copy.deepcopy(k, memo): copy.deepcopy(v, memo) for k, v in _dict_items(self)})

    def copy(self) -> dict[K, V]:  # type: ignore[override]
        """A plain, editable ``dict`` with the same items (nested values stay frozen)."""
        return dict(self)

    def __or__(self, other: object) -> dict[Any, Any]:  # type: ignore[override]
        return _merged(self, other) if isinstance(other, dict) else NotImplemented

    def __ror__(self, other: object) -> dict[Any, Any]:  # type: ignore[override]
        return _merged(other, self) if isinstance(other, dict) else NotImplemented

    def __setitem__(self, key: K, value: V) -> NoReturn:
        _read_only("FrozenDict", f"setting key {key!r}")

    def __delitem__(self, key: K) -> NoReturn:
        _read_only("FrozenDict", f"deleting key {key!r}")

    def __ior__(self, other: object) -> NoReturn:  # type: ignore[override]
        _read_only("FrozenDict", "|=")

    def update(self, *args: object, **kwargs: object) -> NoReturn:
        """Not allowed: raises ``TypeError``."""
        _read_only("FrozenDict", "update()")

    def pop(self, *args: object) -> NoReturn:  # type: ignore[override]
        """Not allowed: raises ``TypeError``."""
        _read_only("FrozenDict", "pop()")

    def popitem(self) -> NoReturn:
        """Not allowed: raises ``TypeError``."""
        _read_only("FrozenDict", "popitem()")

    def clear(self) -> NoReturn:
        """Not allowed: raises ``TypeError``."""
        _read_only("FrozenDict", "clear()")

    def setdefault(self, *args: object) -> NoReturn:  # type: ignore[override]
        """Not allowed: raises ``TypeError``."""
        _read_only("FrozenDict", "setdefault()")


class FrozenList(list[T]):
    """A read-only ``list``, frozen at every level (nested dicts are ``FrozenDict``, lists ``FrozenList``).

    Built like ``list(iterable)``; tuples inside become ``FrozenList``. Unhashable, equal to the plain list (never
    to a tuple), printed like it; every change raises ``TypeError``. Slices, ``+`` and ``*`` give plain lists.
    """

    __slots__ = ()

    def __new__(cls, iterable: Iterable[T] = (), /) -> FrozenList[T]:
        self = _list_new(cls)
        _list_extend(self, [v if type(v) in _ATOMIC else freeze(v) for v in iterable])
        return self

    def __init__(self, iterable: Iterable[T] = (), /) -> None:
        """Everything is done by ``__new__``, so calling ``__init__`` again changes nothing."""

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return list.__repr__(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (list(self),))

    def __copy__(self) -> FrozenList[T]:
        return type(self)(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenList[T]:
        return type(self)([copy.deepcopy(v, memo) for v in self])

    def copy(self) -> list[T]:
        """A plain, editable ``list`` with the same items (nested values stay frozen)."""
        return list(self)

    def __setitem__(self, index: object, value: object) -> NoReturn:
        _read_only("FrozenList", "assigning to an item or a slice")

    def __delitem__(self, index: object) -> NoReturn:
        _read_only("FrozenList", "deleting an item or a slice")

    def __iadd__(self, other: object) -> NoReturn:  # type: ignore[override]
        _read_only("FrozenList", "+=")

    def __imul__(self, other: object) -> NoReturn:  # type: ignore[override]
        _read_only("FrozenList", "*=")

    def append(self, value: T) -> NoReturn:
        """Not allowed: raises ``TypeError``."""
        _read_only("FrozenList", "append()")

    def extend(self, values: Iterable[T]) -> NoReturn:
        """Not allowed: raises ``TypeError``."""
        _read_only("FrozenList", "extend()")

    def insert(self, index: SupportsIndex, value: T) -> NoReturn:
        """Not allowed: raises ``TypeError``."""
        _read_only("FrozenList", "insert()")

    def remove(self, value: T) -> NoReturn:
        """Not allowed: raises ``TypeError``."""
        _read_only("FrozenList", "remove()")

    def pop(self, index: SupportsIndex = -1) -> NoReturn:
        """Not allowed: raises ``TypeError``."""
        _read_only("FrozenList", "pop()")

    def clear(self) -> NoReturn:
        """Not allowed: raises ``TypeError``."""
        _read_only("FrozenList", "clear()")

    def sort(self, *args: object, **kwargs: object) -> NoReturn:
        """Not allowed: raises ``TypeError``. Use ``sorted(value)``."""
        _read_only("FrozenList", "sort() (use sorted(value) for a sorted copy)")

    def reverse(self) -> NoReturn:
        """Not allowed: raises ``TypeError``. Use ``reversed(value)`` or ``value[::-1]``."""
        _read_only("FrozenList", "reverse() (use reversed(value) or value[::-1])")


_ATOMIC: frozenset[type] = frozenset({str, int, float, bool, type(None), FrozenDict, FrozenList})


def freeze(value: Any) -> Any:
    """Return ``value`` frozen at every level.

    A ``FrozenDict``/``FrozenList`` is returned as is; any other ``Mapping`` becomes a ``FrozenDict`` and any
    ``list`` or ``tuple`` a ``FrozenList``; everything else (scalars, ``bytes``, ``set``, objects) is returned
    unchanged. The argument is never modified.
    """
    cls = type(value)
    if cls in _ATOMIC:
        return value
    if cls is dict:
        frozen_dict = _dict_new(FrozenDict)
        _dict_update(frozen_dict, value)
        _freeze_values(frozen_dict)
        return frozen_dict
    if cls is list or cls is tuple:
        frozen_list = _list_new(FrozenList)
        _list_extend(frozen_list, [v if type(v) in _ATOMIC else freeze(v) for v in value])
        return frozen_list
    if isinstance(value, (FrozenDict, FrozenList)):
        return value
    if isinstance(value, Mapping):
        return FrozenDict(value)
    if isinstance(value, (list, tuple)):
        return FrozenList(value)
    return value


def thaw(value: Any) -> Any:
    """Return an editable deep copy: every ``Mapping`` becomes a ``dict`` and every list or tuple a ``list``."""
    cls = type(value)
    if cls in _SCALARS:
        return value
    if cls is FrozenDict or cls is dict:  # the common case (tool arguments), without the Mapping ABC check
        # Fast path: a dict of scalars (most tool arguments) is one C-level copy, with no comprehension.
        out = dict(value)
        for item in _dict_values(out):
            if type(item) not in _SCALARS:
                return {k: v if type(v) in _SCALARS else thaw(v) for k, v in value.items()}
        return out
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value


_SCALARS: frozenset[type] = frozenset({str, int, float, bool, type(None)})
