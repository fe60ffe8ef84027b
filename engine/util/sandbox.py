"""The template sandbox: prompt templates from untrusted spec folders see plain data only.

A template may read the data it is given and build text from it; it can reach no file, no code
and no object of the engine. :class:`TemplateSandbox` is Jinja's ``ImmutableSandboxedEnvironment``
with StrictUndefined and this policy:

- values are plain data (:func:`plain`: str, int, float, bool, None, lists, tuples, dicts; paths
  and records are converted at the edge);
- attribute access reaches mapping keys and a short list of methods (``METHODS`` in
  ``engine.util.sandbox_budget``: ``dict.items`` / ``keys`` / ``values`` / ``get``, ``list.index`` /
  ``count``, string methods that return text or a test), the ``loop`` variables and the macros of
  imported templates; nothing else, whatever the name;
- only those methods, macros, ``loop``, blocks, ``range`` and ``dict`` can be called;
- the filter table is explicit (``FILTER_ESTIMATES``; ``attr`` is left out) and every filter that
  builds something is charged for it first;
- the globals are ``range`` (at most 100,000 items) and ``dict``: ``cycler``, ``joiner``,
  ``namespace`` and ``lipsum`` are removed;
- templates load only from their folders (``engine.util.safepaths``), and each render has a budget of
  steps and characters (``engine.util.sandbox_budget``).

Breaking the policy raises ``jinja2.exceptions.SecurityError`` (or an UndefinedError naming it).
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import inspect
import json
import os
import types
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path, PurePath
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.exceptions import SecurityError
from jinja2.loaders import split_template_path
from jinja2.runtime import BlockReference, LoopContext, Macro, TemplateReference, Undefined
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import _PassArg

from engine.util import sandbox_budget as sb
from engine.util.safepaths import MAX_SPEC_BYTES, read_text

# --- plain data -------------------------------------------------------------------------------


def plain(value: Any, _memo: dict[int, Any] | None = None) -> Any:
    """``value`` as plain data for a template: str / int / float / bool / None stay; a path or a
    date becomes its text; a dataclass record becomes a dict of its fields (but those whose metadata
    says ``template: False``: DBs, gold traces, plugin code) and public properties;
    a mapping becomes a dict with text keys; a list or tuple keeps its kind (a set becomes a list);
    anything else becomes its text. Containers already plain are shared, not copied (the sandbox
    is immutable). Raises RecursionError for data nested beyond Python's limit."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    memo = {} if _memo is None else _memo
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int | float):
        return int(value) if isinstance(value, int) else float(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if _memo is not None and value.__dataclass_params__.frozen:  # type: ignore[attr-defined]
            return plain_record(value)  # a frozen record shared by many scenarios: converted once
        if id(value) not in memo:
            record = {
                f.name: plain(getattr(value, f.name), memo)
                for f in dataclasses.fields(value)
                if f.metadata.get("template", True)
            }
            for name, attr in vars(type(value)).items():
                if isinstance(attr, property) and not name.startswith("_"):
                    record[name] = plain(getattr(value, name), memo)
            memo[id(value)] = record
        return memo[id(value)]
    if type(value) is dict and id(value) not in memo:
        try:  # JSON-shaped data (the common case) converts at C speed; dates, sets, odd keys do not
            memo[id(value)] = json.loads(json.dumps(value, ensure_ascii=False, check_circular=True))
            return memo[id(value)]
        except (TypeError, ValueError, RecursionError):
            pass
    elif type(value) is dict:
        return memo[id(value)]
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        same = type(value) is dict
        for key, item in value.items():
            text_key = key if type(key) is str else str(plain(key, memo))
            out[text_key] = converted = plain(item, memo)
            same = same and text_key is key and converted is item
        return value if same else out
    if isinstance(value, list | tuple):
        items = [plain(item, memo) for item in value]
        if type(value) in (list, tuple) and all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return tuple(items) if isinstance(value, tuple) else items
    if isinstance(value, set | frozenset):
        return sorted((plain(item, memo) for item in value), key=repr)
    return str(value)


_RECORDS: dict[int, tuple[weakref.ref[Any], Any]] = {}


def _forget(key: int, _ref: object) -> None:
    """The weak reference's callback: the record at ``key`` is gone."""
    _RECORDS.pop(key, None)


def plain_record(record: Any) -> Any:
    """:func:`plain` of a frozen record (a Scenario), computed once per record object: a scenario's
    data is walked on its first render only."""
    key = id(record)
    hit = _RECORDS.get(key)
    if hit is not None and hit[0]() is record:
        return hit[1]
    value = plain(record, None)
    _RECORDS[key] = (weakref.ref(record, functools.partial(_forget, key)), value)
    return value


# --- what a template may touch ----------------------------------------------------------------

#: Attributes of the ``loop`` variable a template may read.
LOOP_ATTRIBUTES = frozenset(
    {"index", "index0", "revindex", "revindex0", "first", "last", "length", "depth", "depth0"}
    | {"previtem", "nextitem", "cycle", "changed"}
)


class BoundMethod:
    """An allowed method of a plain value, charged to the render budget before it runs."""

    __slots__ = ("_estimate", "_name", "_obj")

    def __init__(self, obj: Any, name: str, estimate: Callable[..., int] | None):
        self._obj, self._name, self._estimate = obj, name, estimate

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._estimate is not None:
            sb.current().charge(self._estimate(self._obj, *args, **kwargs))
        return getattr(self._obj, self._name)(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<method {self._name}>"


def _method(obj: Any, name: Any) -> BoundMethod | None:
    if not isinstance(name, str):
        return None
    for kind, table in sb.METHODS.items():
        if isinstance(obj, kind) and name in table:
            return BoundMethod(obj, name, table[name])
    return None


def guarded_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` charged with ``FILTER_ESTIMATES[name]`` before each call (KeyError when the filter
    is not in the table: a filter must say what it builds)."""
    estimate = sb.FILTER_ESTIMATES[name]
    skip = 0 if _PassArg.from_obj(func) is None else 1

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if estimate is not None:
            sb.current().charge(estimate(*args[skip:], **kwargs))
        return func(*args, **kwargs)

    return functools.update_wrapper(wrapper, func)


def bounded_range(*args: int) -> range:
    """``range`` of at most :data:`engine.util.sandbox_budget.MAX_RANGE` items (one step per call)."""
    sb.current().step()
    rng = range(*args)
    if len(rng) > sb.MAX_RANGE:
        raise OverflowError(f"Range too big: the sandbox allows at most {sb.MAX_RANGE} items")
    return rng


# --- the environment ----------------------------------------------------------------------------


#: The filter every ``for`` loop's iterable is passed through (one step per item).
GUARD_FILTER = "_guard_iter"


def guard_iter(iterable: Any) -> Any:
    """The items of ``iterable``, one budget step each (StrictUndefined raises on iteration)."""
    budget = sb.current()
    for item in iterable:
        budget.step()
        yield item


class _CodeGenerator(CodeGenerator):
    def visit_Template(self, node: nodes.Template, frame: Frame | None = None) -> None:
        for loop in node.find_all(nodes.For):
            if not (isinstance(loop.iter, nodes.Filter) and loop.iter.name == GUARD_FILTER):
                guarded = nodes.Filter(loop.iter, GUARD_FILTER, [], [], None, None, lineno=loop.iter.lineno)
                loop.iter = guarded
        super().visit_Template(node, frame)

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:  # ``a ~ b``
        self.write("environment.join_text((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


class _BudgetedTemplate(jinja2.Template):
    def render(self, *args: Any, **kwargs: Any) -> str:
        token = sb.begin()
        try:
            return super().render(*args, **kwargs)
        finally:
            sb.end(token)


def _concat(chunks: Any) -> str:
    """Output and block text: charged as it is joined, refused past the budget."""
    budget, parts, total = sb.current(), [], 0
    for chunk in chunks:
        total += len(chunk)
        if total > budget.units:
            budget.charge(total)
        parts.append(chunk)
    budget.charge(total)
    return "".join(parts)


def _finalize(value: Any) -> Any:
    """Every ``{{ value }}``: charged the size of its text before it is made."""
    if not isinstance(value, str):
        budget = sb.current()
        budget.charge(sb.weight(value, limit=budget.units))
    return value


class TemplateSandbox(ImmutableSandboxedEnvironment):
    """The sandboxed environment for prompt templates (policy in the module docstring).

    Accepts Environment's keyword arguments; ``undefined`` defaults to StrictUndefined.
    """

    code_generator_class = _CodeGenerator
    template_class = _BudgetedTemplate
    intercepted_binops = frozenset({"*", "**", "+", "%"})
    concat = staticmethod(_concat)

    def __init__(self, **kwargs: Any):
        kwargs.setdefault("undefined", jinja2.StrictUndefined)
        kwargs["finalize"] = _finalize
        super().__init__(**kwargs)
        self.globals = {"range": bounded_range, "dict": dict}
        builtin = self.filters.items()
        self.filters = {name: guarded_filter(name, f) for name, f in builtin if name in sb.FILTER_ESTIMATES}
        self.filters[GUARD_FILTER] = guard_iter

    def add_filters(self, filters: Mapping[str, Callable[..., Any]]) -> None:
        """Register more filters (each must be in FILTER_ESTIMATES)."""
        self.filters.update({name: guarded_filter(name, f) for name, f in filters.items()})

    # attribute and item access ------------------------------------------------------------------
    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        return _method(obj, attr) is not None or (isinstance(obj, LoopContext) and attr in LOOP_ATTRIBUTES)

    def getattr(self, obj: Any, attribute: str) -> Any:
        return self._lookup(obj, attribute, attribute_first=True)

    def getitem(self, obj: Any, argument: Any) -> Any:
        return self._lookup(obj, argument, attribute_first=False)

    def _lookup(self, obj: Any, key: Any, attribute_first: bool) -> Any:
        if isinstance(obj, Undefined):
            return obj[key]  # StrictUndefined raises here
        method = _method(obj, key)
        if method is not None and attribute_first:
            return method
        if isinstance(obj, tuple) and key in getattr(type(obj), "_fields", ()):
            return getattr(obj, key)  # a named tuple's field (groupby gives grouper / list)
        if isinstance(obj, dict | list | tuple | str | range | TemplateReference):
            try:
                return obj[key]
            except (TypeError, LookupError):
                pass
        elif isinstance(obj, LoopContext) and isinstance(key, str) and key in LOOP_ATTRIBUTES:
            return getattr(obj, key)
        elif isinstance(obj, jinja2.environment.TemplateModule) and isinstance(key, str):
            exported = vars(obj)
            if not key.startswith("_") and key in exported:
                return exported[key]
        if method is not None:
            return method
        if isinstance(key, str) and _has_static(obj, key):
            return self.unsafe_undefined(obj, key)
        return self.undefined(obj=obj, name=key)

    # calls, operators, loops, includes ------------------------------------------------------------
    def is_safe_callable(self, obj: Any) -> bool:
        if isinstance(obj, BoundMethod | Macro | LoopContext | BlockReference):
            return True
        if obj is bounded_range or obj is dict:
            return True
        return (
            isinstance(obj, types.MethodType)
            and isinstance(obj.__self__, LoopContext)
            and obj.__name__ in ("cycle", "changed")
        )

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        sb.current().step()
        if isinstance(__obj, Undefined):
            return __obj(*args, **kwargs)  # StrictUndefined raises what was undefined or unsafe
        if not __self.is_safe_callable(__obj):
            raise SecurityError(f"a {type(__obj).__name__} object cannot be called in a template")
        return __context.call(__obj, *args, **kwargs)

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        budget = sb.current()
        if operator == "*":
            _check_repeat(left, right, budget)
        elif operator == "**":
            _check_power(left, right)
        elif operator == "+" and isinstance(left, str | list | tuple):
            budget.charge(sb.weight(left) + sb.weight(right))
        elif operator == "%" and isinstance(left, str):
            budget.charge(sb.printf_estimate(left, right))
        result = self.binop_table[operator](left, right)
        sb.check_int(result)
        return result

    def join_text(self, parts: tuple[Any, ...]) -> str:
        """``a ~ b``: charged the size of the joined text first."""
        budget = sb.current()
        budget.charge(sum(sb.weight(p, limit=budget.units) for p in parts))
        return "".join(str(p) for p in parts)

    def get_template(self, *args: Any, **kwargs: Any) -> jinja2.Template:
        sb.current().step()
        return super().get_template(*args, **kwargs)

    def select_template(self, *args: Any, **kwargs: Any) -> jinja2.Template:
        sb.current().step()
        return super().select_template(*args, **kwargs)


def _has_static(obj: Any, name: str) -> bool:
    try:
        inspect.getattr_static(obj, name)
    except AttributeError:
        return False
    return True


def _check_repeat(left: Any, right: Any, budget: sb.Budget) -> None:
    for seq, times in ((left, right), (right, left)):
        if isinstance(seq, str | list | tuple) and isinstance(times, int):
            if len(seq) * times > sb.MAX_REPEAT:
                raise SecurityError(f"template repetition over {sb.MAX_REPEAT} items")
            budget.charge(sb.weight(seq, limit=budget.units) * max(times, 0))
            return
    ints = isinstance(left, int) and isinstance(right, int)
    if ints and left.bit_length() + right.bit_length() > sb.MAX_INT_BITS:
        raise SecurityError(f"template number over {sb.MAX_INT_BITS} bits")


def _check_power(base: Any, exponent: Any) -> None:
    if isinstance(exponent, int | float) and abs(exponent) > sb.MAX_EXPONENT:
        raise SecurityError(f"template exponent over {sb.MAX_EXPONENT}")
    big = isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1
    if big and base.bit_length() * exponent > sb.MAX_INT_BITS:
        raise SecurityError(f"template number over {sb.MAX_INT_BITS} bits")


class UnsafeTemplateError(jinja2.TemplateNotFound):
    """A template that exists but may not be read: it leaves its folder or is not a regular file of
    at most MAX_SPEC_BYTES. ``message`` says which and why."""


class ContainedLoader(jinja2.BaseLoader):
    """Loads ``name`` from the first of ``folders`` that holds it, only as a regular file of at most
    MAX_SPEC_BYTES inside that folder (symlinks resolved; ``..`` refused by Jinja's path split).
    Raises TemplateNotFound, or UnsafeTemplateError for a file it refuses to read."""

    def __init__(self, folders: tuple[str, ...]):
        self.folders = tuple(folders)

    def get_source(
        self, environment: jinja2.Environment, template: str
    ) -> tuple[str, str, Callable[[], bool]]:
        rel = "/".join(split_template_path(template))
        for folder in self.folders:
            try:
                source = read_text(folder, rel, MAX_SPEC_BYTES)
                path = Path(folder, rel).resolve()
                mtime = os.path.getmtime(path)
            except FileNotFoundError:
                continue
            except (OSError, UnicodeDecodeError) as err:
                why = "is not UTF-8 text" if isinstance(err, UnicodeDecodeError) else str(err)
                message = f"template {template!r} in {folder} {why}"
                raise UnsafeTemplateError(template, message) from None

            def uptodate(path: Path = path, mtime: float = mtime) -> bool:
                try:
                    return os.path.getmtime(path) == mtime
                except OSError:
                    return False

            return source, str(Path(folder) / rel), uptodate
        raise jinja2.TemplateNotFound(template)
