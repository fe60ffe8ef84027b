"""Resource bounds for one template render: a budget of steps and characters, and size estimates.

A prompt template comes from a spec folder the user may not have written, so rendering it must
end, and must not exhaust memory, whatever it does. Every render gets a fresh :class:`Budget`
(held in a context variable by ``engine.util.sandbox``): each loop iteration, call and include costs
one step, and every operation that builds text or lists (output, ``~``, ``+``, ``*``, ``%``,
filters, string methods) is charged, before it runs, the size it will build. Over a bound the
render stops with ``jinja2.exceptions.SecurityError``.

Sizes are in *units*, about one character of text or one list or mapping slot; the estimate of a
value is roughly the length of its text (:func:`weight`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, ItemsView, KeysView, Mapping, ValuesView
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from jinja2.exceptions import SecurityError

#: Loop iterations + calls (macros, methods, ``range``) + includes one render may make.
MAX_STEPS = 250_000
#: Units (about characters) one render may build in total, output included.
MAX_UNITS = 8_000_000
#: Largest number a template may pass as a width, count or size argument (``center``, ``indent``,
#: ``batch``, ``%10000s``...).
MAX_ARG = 10_000
#: Largest integer a template may compute, in bits (about 1,200 decimal digits).
MAX_INT_BITS = 4_096
#: Largest ``**`` exponent and ``*`` repetition count (items), as before the budget.
MAX_EXPONENT = 1_000
MAX_REPEAT = 1_000_000
#: Largest ``range()`` (items).
MAX_RANGE = 100_000


@dataclass
class Budget:
    """What one render may still spend: ``steps`` and ``units`` (see the module docstring)."""

    steps: int = MAX_STEPS
    units: int = MAX_UNITS

    def step(self, n: int = 1) -> None:
        """Spend ``n`` steps; raises SecurityError when none are left."""
        self.steps -= n
        if self.steps < 0:
            raise SecurityError(f"template ran over {MAX_STEPS} steps (loop iterations, calls, includes)")

    def charge(self, units: int) -> None:
        """Spend ``units``; raises SecurityError (before anything is built) when they are not left."""
        if units > self.units:
            raise SecurityError(f"template builds over {MAX_UNITS} characters (text, lists, output)")
        self.units -= units


_CURRENT: ContextVar[Budget | None] = ContextVar("template_budget", default=None)


def current() -> Budget:
    """The budget of the render in progress; outside a render, a fresh one (per operation)."""
    return _CURRENT.get() or Budget()


def begin() -> Any:
    """Start a render's budget unless one is active (an include shares its parent's); returns a
    token for :func:`end` (None when nothing was started)."""
    return _CURRENT.set(Budget()) if _CURRENT.get() is None else None


def end(token: Any) -> None:
    if token is not None:
        _CURRENT.reset(token)


def weight(value: Any, limit: int = MAX_UNITS, indent: int = 0) -> int:
    """About how many characters ``str(value)`` (or its JSON) takes: the length of a string, two
    units per list slot and four per mapping entry plus their items, eight per ``range`` item.
    ``indent`` adds that many characters per nesting level to every item (``tojson(indent=...)``).
    Stops counting once past ``limit`` (the result is then above it), so a huge value costs little
    to weigh."""
    total = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, list | tuple | set | frozenset):
            total += 2 + len(item) * (2 + indent * (depth + 1))
            stack.extend((v, depth + 1) for v in item)
        elif isinstance(item, Mapping):
            total += 2 + len(item) * (4 + indent * (depth + 1))
            for k, v in item.items():
                stack.append((k, depth + 1))
                stack.append((v, depth + 1))
        elif isinstance(item, KeysView | ValuesView | ItemsView):
            total += 2 + len(item) * (4 + indent * (depth + 1))
            stack.extend((v, depth + 1) for v in item)
        elif isinstance(item, range):
            total += 2 + len(item) * 8
        elif isinstance(item, bool) or item is None:
            total += 5
        elif isinstance(item, int):
            total += 2 + item.bit_length() // 3
        else:
            total += 24
        if total > limit:
            return total
    return total


def check_arg(value: Any, what: str) -> None:
    """Refuse an int argument (width, count, indent) above :data:`MAX_ARG`."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_ARG:
        raise SecurityError(f"template {what} {value} is over {MAX_ARG}")


def check_int(value: Any) -> None:
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise SecurityError(f"template number over {MAX_INT_BITS} bits")


_PRINTF = re.compile(r"%(?:\([^)]*\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?([a-zA-Z%])")


def printf_estimate(fmt: str, args: Any) -> int:
    """Size of ``fmt % args`` (``%`` operator and the ``format`` filter): the format, plus per
    conversion the widths and the text of the arguments. Refuses widths over :data:`MAX_ARG`."""
    arg_units = weight(args) + 24
    total = len(fmt)
    for match in _PRINTF.finditer(fmt):
        for number in match.group(1, 2):
            if number and number != "*":
                check_arg(int(number) if len(number) < 8 else MAX_ARG + 1, "format width")
                total += int(number)
            elif number == "*":
                total += MAX_ARG
        total += arg_units
    return total


def _text(value: Any) -> int:
    return len(value) if isinstance(value, str) else weight(value)


def replace_estimate(s: Any, old: Any, new: Any, count: Any = None) -> int:
    """Size of ``s.replace(old, new, count)``."""
    s, old, new = str(s), str(old), str(new)
    hits = s.count(old) if old else len(s) + 1
    if isinstance(count, int) and count >= 0:
        hits = min(hits, count)
    return len(s) + hits * len(new)


def join_estimate(items: Any, sep: Any = "") -> int:
    """Size of ``sep.join(items)`` for a sized ``items``."""
    n = len(items) if hasattr(items, "__len__") else 0
    return weight(items) + n * _text(sep)


def indent_estimate(s: Any, width: Any = 4, *args: Any, **kwargs: Any) -> int:
    check_arg(width, "indent width")
    pad = width if isinstance(width, int) else len(str(width))
    text = str(s)
    return len(text) + (text.count("\n") + 1) * max(pad, 0)


def padded_estimate(s: Any, width: Any = 80, *args: Any) -> int:
    """``center`` / ``ljust`` / ``rjust`` / ``zfill``: the text or the width, whichever is longer."""
    check_arg(width, "width")
    return _text(s) + (width if isinstance(width, int) else 0)


def scaled(factor: int) -> Any:
    """An estimator: ``factor`` times the weight of the value and the arguments."""

    def estimate(value: Any, *args: Any, **kwargs: Any) -> int:
        return factor * (weight(value) + weight(args) + weight(kwargs))

    return estimate


def sized(*positions: str) -> Any:
    """An estimator for filters whose named/positional arguments are counts or widths: checks them
    against MAX_ARG and adds them to the weight of the value."""

    def estimate(value: Any, *args: Any, **kwargs: Any) -> int:
        extra = 0
        for arg in [*args, *(kwargs.get(p) for p in positions)]:
            check_arg(arg, "size argument")
            if isinstance(arg, int) and not isinstance(arg, bool):
                extra += abs(arg)
        return weight(value) + weight([a for a in args if not isinstance(a, int)]) + extra

    return estimate


def tojson_estimate(value: Any, indent: Any = None) -> int:
    check_arg(indent, "tojson indent")
    return 2 * weight(value, indent=indent if isinstance(indent, int) else 0)


# --- what templates may call, with what each is charged -------------------------------------

_TEXT3 = scaled(3)
_TEXT1 = scaled(1)
_STR_METHODS: dict[str, Callable[..., int] | None] = {
    **dict.fromkeys(("capitalize", "casefold", "lower", "upper", "swapcase", "title"), _TEXT3),
    **dict.fromkeys(("center", "ljust", "rjust", "zfill"), padded_estimate),
    **dict.fromkeys(("strip", "lstrip", "rstrip", "removeprefix", "removesuffix"), _TEXT1),
    **dict.fromkeys(("partition", "rpartition"), _TEXT1),
    **dict.fromkeys(("split", "rsplit", "splitlines"), _TEXT3),
    "replace": replace_estimate,
    "join": lambda sep, items=(), *a: join_estimate(items, sep),
    **dict.fromkeys(
        (
            "count", "endswith", "startswith", "find", "rfind", "index", "rindex", "isalnum",
            "isalpha", "isascii", "isdecimal", "isdigit", "isidentifier", "islower", "isnumeric",
            "isprintable", "isspace", "istitle", "isupper",
        ),
        None,
    ),
}  # fmt: skip
#: Methods a template may call, by the type of the object (``None``: nothing built, no charge).
METHODS: dict[type, dict[str, Callable[..., int] | None]] = {
    str: _STR_METHODS,
    dict: dict.fromkeys(("items", "keys", "values", "get")),
    list: dict.fromkeys(("index", "count")),
    tuple: dict.fromkeys(("index", "count")),
}


def _wordwrap_estimate(s: Any, width: Any = 79, *args: Any, **kwargs: Any) -> int:
    check_arg(width, "wrap width")
    wrap = kwargs.get("wrapstring") or (args[1] if len(args) > 1 and args[1] else "\n")
    return len(str(s)) * (1 + len(str(wrap)))


def _format_estimate(value: Any, *args: Any, **kwargs: Any) -> int:
    return printf_estimate(str(value), args or kwargs)


#: Jinja's built-in filters a template may use, each with what it is charged before it runs
#: (None: it builds nothing of size). ``attr`` is left out: plain data has no attributes to read.
FILTER_ESTIMATES: dict[str, Callable[..., int] | None] = {
    **dict.fromkeys(
        (
            "abs", "count", "d", "default", "first", "last", "length", "max", "min", "random",
            "round", "int", "float", "wordcount", "filesizeformat", "items", "safe", "map",
            "select", "reject", "selectattr", "rejectattr",
        ),
        None,
    ),
    **dict.fromkeys(("dictsort", "list", "reverse", "sort", "string", "striptags", "sum", "trim"), _TEXT1),
    **dict.fromkeys(("unique", "groupby"), scaled(2)),
    **dict.fromkeys(("capitalize", "lower", "title", "upper"), _TEXT3),
    **dict.fromkeys(("e", "escape", "forceescape", "xmlattr"), scaled(6)),
    **dict.fromkeys(("urlencode", "urlize"), scaled(12)),
    "batch": sized("linecount"),
    "slice": sized("slices"),
    "truncate": sized("length", "leeway"),
    "center": padded_estimate,
    "indent": indent_estimate,
    "format": _format_estimate,
    "join": lambda value, d="", *a, **k: join_estimate(value, d),
    "replace": replace_estimate,
    "wordwrap": _wordwrap_estimate,
    "tojson": tojson_estimate,
    "pprint": lambda value: 2 * weight(value, indent=1),
    # the prompt filters of engine.core.render
    "spell": scaled(12),
    "humanize": _TEXT3,
    "outline": lambda value, depth=0: 2 * weight(value, indent=2),
}  # fmt: skip
