"""Tests for alpineagents._frozen: the read-only JSON containers, freeze and thaw."""

from __future__ import annotations

import copy
import json
import pickle
from collections import OrderedDict
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import alpineagents._frozen as frozen_module
from alpineagents._frozen import JSON, FrozenDict, FrozenList, freeze, thaw

# --- strategies ------------------------------------------------------------------------------------------------

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=20,
)
# JSON-like values that may also hold tuples and non-dict mappings
loose_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.lists(children, max_size=4).map(tuple)
        | st.dictionaries(st.text(max_size=5), children, max_size=4)
        | st.dictionaries(st.text(max_size=5), children, max_size=4).map(MappingProxyType)
    ),
    max_leaves=20,
)


def plain(value: Any) -> Any:
    """The JSON form of a loose value (tuples become lists, mappings dicts)."""
    if isinstance(value, (dict, MappingProxyType)):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def assert_frozen_everywhere(value: Any) -> None:
    if isinstance(value, dict):
        assert type(value) is FrozenDict
        for v in value.values():
            assert_frozen_everywhere(v)
    elif isinstance(value, list):
        assert type(value) is FrozenList
        for v in value:
            assert_frozen_everywhere(v)
    else:
        assert not isinstance(value, tuple)


def assert_plain_everywhere(value: Any) -> None:
    if isinstance(value, dict):
        assert type(value) is dict
        for v in value.values():
            assert_plain_everywhere(v)
    elif isinstance(value, list):
        assert type(value) is list
        for v in value:
            assert_plain_everywhere(v)


# --- checks ----------------------------------------------------------------------------------------------------


DICT_MUTATIONS: list[tuple[str, Callable[[Any], Any], str]] = [
    ("setitem", lambda d: d.__setitem__("k", 1), "setting key 'k'"),
    ("delitem existing", lambda d: d.__delitem__("name"), "deleting key 'name'"),
    ("delitem missing", lambda d: d.__delitem__("missing"), "deleting key 'missing'"),
    ("update mapping", lambda d: d.update({"k": 1}), "update()"),
    ("update keywords", lambda d: d.update(k=1), "update()"),
    ("update empty", lambda d: d.update(), "update()"),
    ("pop existing", lambda d: d.pop("name"), "pop()"),
    ("pop missing default", lambda d: d.pop("missing", None), "pop()"),
    ("popitem", lambda d: d.popitem(), "popitem()"),
    ("clear", lambda d: d.clear(), "clear()"),
    ("setdefault new", lambda d: d.setdefault("k", 1), "setdefault()"),
    ("setdefault existing", lambda d: d.setdefault("name"), "setdefault()"),
    ("ior", lambda d: d.__ior__({"k": 1}), "|="),
]


@pytest.mark.parametrize(("label", "mutate", "operation"), DICT_MUTATIONS, ids=[m[0] for m in DICT_MUTATIONS])
def test_every_frozen_dict_change_raises_the_read_only_error(
    label: str, mutate: Callable[[Any], Any], operation: str
) -> None:
    d = FrozenDict({"name": "a", "list": [1, {"b": 2}]})
    before = json.dumps(d)
    with pytest.raises(TypeError) as info:
        mutate(d)
    text = str(info.value)
    assert "FrozenDict is read-only" in text
    assert f"so {operation} is not allowed" in text
    assert "edit_extra_data()" in text
    assert json.dumps(d) == before


def test_setting_a_key_names_it_and_augmented_or_is_refused() -> None:
    d = FrozenDict({"name": "a"})
    with pytest.raises(TypeError) as info:
        d["name"] = "x"
    text = str(info.value)
    assert "FrozenDict is read-only" in text
    assert "setting key 'name'" in text
    assert "edit_extra_data()" in text
    assert text.splitlines()[0] == (
        "this FrozenDict is read-only (it was recorded in a State's history), so setting key 'name' is not allowed"
    )
    assert "Fix: make a plain copy and change that: dict(value) copies the top level, and " in text
    assert text.endswith(
        "Example:\n    with state.edit_extra_data() as data:\n        data['notes'] = ['checked b.py']"
    )
    with pytest.raises(TypeError, match=r"\|="):
        d |= {"x": 1}  # type: ignore[operator]
    assert d == {"name": "a"}
    assert json.dumps(d) == '{"name": "a"}'


LIST_MUTATIONS: list[tuple[str, Callable[[Any], Any], str]] = [
    ("setitem", lambda x: x.__setitem__(0, 9), "assigning to an item or a slice"),
    ("setslice", lambda x: x.__setitem__(slice(0, 1), [9]), "assigning to an item or a slice"),
    ("delitem", lambda x: x.__delitem__(0), "deleting an item or a slice"),
    ("delslice", lambda x: x.__delitem__(slice(0, 2)), "deleting an item or a slice"),
    ("append", lambda x: x.append(3), "append()"),
    ("extend", lambda x: x.extend([3]), "extend()"),
    ("insert", lambda x: x.insert(0, 3), "insert()"),
    ("remove", lambda x: x.remove(1), "remove()"),
    ("pop", lambda x: x.pop(), "pop()"),
    ("pop index", lambda x: x.pop(0), "pop()"),
    ("clear", lambda x: x.clear(), "clear()"),
    ("sort", lambda x: x.sort(), "sort() (use sorted(value) for a sorted copy)"),
    ("sort key", lambda x: x.sort(key=str, reverse=True), "sort() (use sorted(value) for a sorted copy)"),
    ("reverse", lambda x: x.reverse(), "reverse() (use reversed(value) or value[::-1])"),
    ("iadd", lambda x: x.__iadd__([3]), "+="),
    ("imul", lambda x: x.__imul__(2), "*="),
]


@pytest.mark.parametrize(("label", "mutate", "operation"), LIST_MUTATIONS, ids=[m[0] for m in LIST_MUTATIONS])
def test_every_frozen_list_change_raises_the_read_only_error(
    label: str, mutate: Callable[[Any], Any], operation: str
) -> None:
    x = FrozenList([2, 1, [3]])
    with pytest.raises(TypeError) as info:
        mutate(x)
    text = str(info.value)
    assert "read-only" in text
    assert "FrozenList is read-only" in text
    assert f"so {operation} is not allowed" in text
    assert "list(value) copies the top level" in text
    assert "edit_extra_data()" in text
    assert x == [2, 1, [3]]


def test_augmented_assignment_to_a_frozen_list_is_refused() -> None:
    x = FrozenList([1])
    with pytest.raises(TypeError, match="read-only"):
        x += [2]  # type: ignore[operator]
    with pytest.raises(TypeError, match="read-only"):
        x *= 2  # type: ignore[operator]
    with pytest.raises(TypeError) as info:
        x.append(3)
    assert "FrozenList is read-only" in str(info.value)
    assert "append()" in str(info.value)
    assert x == [1]


def test_new_values_are_plain_and_copies_stay_frozen() -> None:
    d = FrozenDict({"a": [1, {"b": 2}]})
    x = FrozenList([1, 2, 3])
    assert type(d | {"x": 1}) is dict
    assert d | {"x": 1} == {"a": [1, {"b": 2}], "x": 1}
    assert type({"x": 1} | d) is dict
    assert type(d.copy()) is dict
    assert type(x[:2]) is list
    assert type(x + [9]) is list
    assert type([9] + x) is list
    assert type(x * 2) is list
    assert type(2 * x) is list
    assert type(x.copy()) is list
    deep = copy.deepcopy(d)
    assert type(deep) is FrozenDict
    assert deep == d and deep is not d
    assert type(deep["a"]) is FrozenList and deep["a"] is not d["a"]
    assert type(deep["a"][1]) is FrozenDict and deep["a"][1] is not d["a"][1]
    with pytest.raises(TypeError):
        deep["a"].append(1)
    shallow = copy.copy(d)
    assert type(shallow) is FrozenDict and shallow == d
    assert type(copy.copy(x)) is FrozenList
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        loaded = pickle.loads(pickle.dumps(x, protocol))
        assert type(loaded) is FrozenList and loaded == x
        loaded_d = pickle.loads(pickle.dumps(d, protocol))
        assert type(loaded_d) is FrozenDict and loaded_d == d
        assert type(loaded_d["a"]) is FrozenList
        assert type(loaded_d["a"][1]) is FrozenDict
    with pytest.raises(TypeError):
        hash(FrozenDict())
    with pytest.raises(TypeError):
        hash(FrozenList())
    assert repr(FrozenDict({"a": [1]})) == "{'a': [1]}"
    assert repr(FrozenList([1, {"a": 2}])) == "[1, {'a': 2}]"
    assert str(FrozenDict({"a": [1]})) == "{'a': [1]}"


def test_deepcopy_of_plain_container_holding_frozen() -> None:
    inner = FrozenDict({"k": [1]})
    outer = {"x": inner, "y": [inner]}
    copied = copy.deepcopy(outer)
    assert type(copied["x"]) is FrozenDict and copied["x"] == inner and copied["x"] is not inner
    assert copied["y"][0] is copied["x"]  # memo keeps shared structure


def test_freeze_and_thaw_convert_at_every_level() -> None:
    f = freeze({"a": (1, 2)})
    assert type(f) is FrozenDict
    assert type(f["a"]) is FrozenList
    assert f["a"] == [1, 2]
    assert f["a"] != (1, 2)
    s = freeze({1, 2})
    assert type(s) is set and s == {1, 2}
    assert freeze(f) is f
    assert freeze(f["a"]) is f["a"]
    t = thaw(f)
    assert type(t) is dict and type(t["a"]) is list
    t["a"].append(3)
    t["new"] = 1
    assert f == {"a": [1, 2]}


def test_freeze_keeps_scalars_and_objects() -> None:
    obj = object()
    for value in (None, True, 1, 1.5, "s", b"b", obj, frozenset({1})):
        assert freeze(value) is value
    source = {"a": [1, {"b": (2,)}]}
    frozen = freeze(source)
    assert frozen == {"a": [1, {"b": [2]}]}
    assert source == {"a": [1, {"b": (2,)}]}  # the argument is never modified
    assert type(source["a"]) is list


def test_freeze_other_mappings_and_sequences() -> None:
    ordered = freeze(OrderedDict([("b", 1), ("a", [2])]))
    assert type(ordered) is FrozenDict and list(ordered) == ["b", "a"] and type(ordered["a"]) is FrozenList
    proxy = freeze(MappingProxyType({"x": (1,)}))
    assert type(proxy) is FrozenDict and proxy == {"x": [1]}

    class MyList(list[int]):
        pass

    assert type(freeze(MyList([1]))) is FrozenList
    assert freeze(()) == [] and type(freeze(())) is FrozenList


def test_construction_like_dict_and_list() -> None:
    assert FrozenDict([("a", 1)], b=[2]) == {"a": 1, "b": [2]}
    assert type(FrozenDict(b=[2])["b"]) is FrozenList
    assert FrozenDict() == {}
    nested = FrozenDict({"a": [1, {"b": 2}]})
    assert type(nested["a"][1]) is FrozenDict
    fk = FrozenDict.fromkeys(["a", "b"], [0])
    assert type(fk) is FrozenDict and fk == {"a": [0], "b": [0]} and type(fk["a"]) is FrozenList
    assert FrozenDict.fromkeys("xy") == {"x": None, "y": None}
    assert FrozenList() == []
    assert FrozenList((1, (2, 3))) == [1, [2, 3]]
    assert type(FrozenList([(2, 3)])[0]) is FrozenList
    assert FrozenList(x for x in range(3)) == [0, 1, 2]


def test_calling_init_again_changes_nothing() -> None:
    d = FrozenDict({"a": 1})
    d.__init__({"b": 2})  # type: ignore[misc]
    assert d == {"a": 1}
    x = FrozenList([1])
    x.__init__([2, 3])  # type: ignore[misc]
    assert x == [1]


def test_reading_works_like_plain_containers() -> None:
    d = FrozenDict({"b": 1, "a": [3, 1, 2]})
    x = d["a"]
    assert d.get("b") == 1 and d.get("z", 5) == 5
    assert "a" in d and len(d) == 2 and list(d) == ["b", "a"]
    assert list(d.keys()) == ["b", "a"] and list(d.values())[0] == 1 and list(d.items())[0] == ("b", 1)
    assert x.index(1) == 1 and x.count(2) == 1 and sorted(x) == [1, 2, 3] and list(reversed(x)) == [2, 1, 3]
    assert {**d} == {"b": 1, "a": [3, 1, 2]} and [*x] == [3, 1, 2]
    assert dict(d) == d and list(x) == x
    assert isinstance(d, dict) and isinstance(x, list)
    assert json.dumps(d, sort_keys=True) == json.dumps({"b": 1, "a": [3, 1, 2]}, sort_keys=True)
    assert json.dumps(d, indent=2) == json.dumps({"b": 1, "a": [3, 1, 2]}, indent=2)

    def f(**kwargs: Any) -> dict[str, Any]:
        return kwargs

    assert f(**d) == {"b": 1, "a": [3, 1, 2]}
    assert x[::-1] == [2, 1, 3]


def test_equality_both_ways() -> None:
    assert FrozenDict({"a": [1]}) == {"a": [1]}
    assert {"a": [1]} == FrozenDict({"a": [1]})
    assert FrozenList([1]) == [1] and [1] == FrozenList([1])
    assert FrozenList([1]) != (1,)
    assert FrozenDict({"a": [1]}) != {"a": (1,)}


def test_generic_and_slots() -> None:
    assert FrozenDict[str, int] is not None and FrozenList[int] is not None
    assert FrozenDict.__slots__ == () and FrozenList.__slots__ == ()
    with pytest.raises(AttributeError):
        FrozenDict().extra = 1  # type: ignore[attr-defined]
    assert frozen_module.__all__ == ["FrozenDict", "FrozenList", "JSON", "freeze", "thaw"]
    assert JSON is not None


# --- properties ------------------------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(json_values)
def test_property_round_trip_json(value: Any) -> None:
    frozen = freeze(value)
    assert frozen == value
    assert_frozen_everywhere(frozen)
    assert thaw(frozen) == value
    assert_plain_everywhere(thaw(frozen))
    assert freeze(thaw(frozen)) == frozen
    assert freeze(frozen) is frozen
    assert json.dumps(frozen, sort_keys=True) == json.dumps(value, sort_keys=True)
    assert json.loads(json.dumps(frozen)) == value
    assert repr(frozen) == repr(value)


@settings(max_examples=150, deadline=None)
@given(loose_values)
def test_property_freeze_normalizes_tuples_and_mappings(value: Any) -> None:
    frozen = freeze(value)
    assert_frozen_everywhere(frozen)
    assert frozen == plain(value)
    assert thaw(value) == plain(value)
    assert_plain_everywhere(thaw(value))


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.text(max_size=5), json_values, max_size=5))
def test_property_frozen_dict_copies(value: dict[str, Any]) -> None:
    d = FrozenDict(value)
    assert d == value
    for protocol in (0, 2, pickle.HIGHEST_PROTOCOL):
        loaded = pickle.loads(pickle.dumps(d, protocol))
        assert loaded == d
        assert_frozen_everywhere(loaded)
    deep = copy.deepcopy(d)
    assert deep == d
    assert_frozen_everywhere(deep)
    plain_copy = d.copy()
    plain_copy["__new__"] = 1
    assert "__new__" not in d
    thawed = thaw(d)
    thawed["__new__"] = 1
    assert "__new__" not in d


@settings(max_examples=100, deadline=None)
@given(st.lists(json_values, max_size=6), st.integers(-8, 8), st.integers(-8, 8))
def test_property_frozen_list_reads_like_list(value: list[Any], start: int, stop: int) -> None:
    x = FrozenList(value)
    assert x == value and value == x
    assert len(x) == len(value)
    assert x[start:stop] == value[start:stop] and type(x[start:stop]) is list
    assert list(reversed(x)) == list(reversed(value))
    assert x + value == value + value
    before = json.dumps(x)
    for mutate in (lambda: x.append(1), lambda: x.clear(), lambda: x.__setitem__(slice(None), [])):
        with pytest.raises(TypeError):
            mutate()
    assert json.dumps(x) == before
    with pytest.raises(TypeError):
        hash(x)
