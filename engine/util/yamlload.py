"""Safe YAML loading that keeps line numbers, so errors can point at ``file:LINE``.

Only the safe loader is used (no Python tags). The document is composed with ``yaml.compose``
and converted by hand, recording the 1-based line of every mapping key and list item under its
JSON path (a tuple of keys and indexes). Duplicate mapping keys are reported, not silently merged.
"""

from __future__ import annotations

import datetime
import math
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from engine.util.errors import Problem

JsonPath = tuple[str | int, ...]


@dataclass(frozen=True)
class YamlDoc:
    """A parsed YAML file: ``data`` (plain dicts/lists/scalars), ``file`` (path as given for messages)
    and ``lines`` mapping JSON paths to 1-based lines. ``problems`` holds duplicate-key findings."""

    file: str
    data: Any
    lines: dict[JsonPath, int] = field(default_factory=dict)
    problems: tuple[Problem, ...] = ()

    def line(self, path: JsonPath) -> int:
        """The line of ``path``, else of its nearest ancestor that has one (1 for the document)."""
        path = tuple(path)
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get((), 1)


class YamlSyntaxError(Exception):
    """A YAML file could not be parsed; ``problem`` carries file, line and message."""

    def __init__(self, problem: Problem):
        self.problem = problem
        super().__init__(str(problem))


def display_path(path: str | Path) -> str:
    """``path`` relative to the working directory when it lies under it, else as given (also when
    it cannot be resolved: a symlink loop, a working directory that is gone)."""
    p = Path(path)
    try:
        return str(p.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
        return str(path)


def format_json_path(path: JsonPath, data: Any = None) -> str:
    """Render ``('tools', 3, 'parameters')`` as ``$.tools[rebook_flight].parameters``.

    List items that are mappings with a string ``name`` (or ``func_name``) are named by it, so a
    message names the object by its id; other items use their index.
    """
    out = "$"
    node = data
    for part in path:
        if isinstance(part, int):
            label: str | int = part
            if isinstance(node, list) and 0 <= part < len(node) and isinstance(node[part], dict):
                item = node[part]
                ident = item.get("name", item.get("func_name"))
                if isinstance(ident, str) and ident:
                    label = ident
            out += f"[{label}]"
        else:
            out += f".{part}" if part.isidentifier() else f"[{part!r}]"
        try:
            node = node[part] if node is not None else None
        except (KeyError, IndexError, TypeError):
            node = None
    return out


_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MAX_FILE_BYTES = 10 * 1024 * 1024
"""Largest spec file read (bytes)."""
MAX_NODES = 100_000
"""Most mapping/list/scalar nodes one spec file may expand to (aliases count each time they are
used); a guard against alias bombs ("billion laughs"). Real spec files hold a few hundred."""
_PLAIN_TAGS = frozenset({"tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"})


def _refuse(node: yaml.Node, message: str) -> yaml.MarkedYAMLError:
    return yaml.MarkedYAMLError(problem=message, problem_mark=node.start_mark)


def _convert(node: yaml.Node, loader: Any, path: JsonPath, doc: dict[str, Any]) -> Any:
    doc["count"] = doc.get("count", 0) + 1
    if doc["count"] > MAX_NODES:
        raise _refuse(node, f"document expands to more than {MAX_NODES} nodes (alias bomb?)")
    if isinstance(node, yaml.MappingNode | yaml.SequenceNode):
        active: set[int] = doc.setdefault("active", set())
        if id(node) in active:
            raise _refuse(node, "recursive alias: a node contains itself")
        active.add(id(node))
        try:
            return _convert_collection(node, loader, path, doc)
        finally:
            active.discard(id(node))
    value = loader.construct_object(node, deep=True)
    message = None
    if isinstance(value, float) and not math.isfinite(value):  # .nan/.inf: no JSON value, no limit
        message = f"{node.value!r} is not a finite number"
    elif isinstance(node, yaml.ScalarNode) and not node.style:  # plain (unquoted) scalars only
        message = _yaml11_surprise(node.value, value)
    if message:
        doc["problems"].append(
            Problem(doc["file"], node.start_mark.line + 1, format_json_path(path), message)
        )
    return value


_LEADING_ZERO = re.compile(r"[-+]?0[0-9_]+")


def _yaml11_surprise(text: str, value: Any) -> str | None:
    """Why an unquoted scalar does not mean what it looks like under YAML 1.1 (PyYAML's rules), or
    None: ``02134`` is octal 1116, ``12:30`` is 750 (base 60), ``no`` / ``on`` are booleans, and
    ``2026-01-05`` is a date (no JSON value: it never equals the text an agent sends)."""
    if isinstance(value, bool) and text.lower() not in ("true", "false"):
        flag = str(value).lower()
        return f"unquoted {text!r} reads as {flag} in YAML; write {flag} for a boolean or '{text}' for text"
    if isinstance(value, int | float) and not isinstance(value, bool):
        if ":" in text:
            return f"unquoted {text!r} reads as the base-60 number {value}; quote it ('{text}') for text"
        if isinstance(value, int) and _LEADING_ZERO.fullmatch(text):
            return f"unquoted {text!r} reads as the octal number {value}; quote it ('{text}') for text"
    if isinstance(value, datetime.date):
        return f"unquoted {text!r} reads as a YAML date, not text; quote it ('{text}')"
    return None


def _convert_collection(node: yaml.Node, loader: Any, path: JsonPath, doc: dict[str, Any]) -> Any:
    lines: dict[JsonPath, int] = doc["lines"]
    if isinstance(node, yaml.MappingNode | yaml.SequenceNode) and node.tag not in _PLAIN_TAGS:
        return loader.construct_object(node, deep=True)  # the safe constructor refuses unknown tags
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            surprise = None
            plain_key = isinstance(key_node, yaml.ScalarNode) and not key_node.style
            if plain_key and not isinstance(key, str) and str(key) != key_node.value:
                surprise = (  # unquoted keys too: `no:` would become the key 'False' in a prompt
                    f"unquoted key {key_node.value!r} is not text in YAML (the key becomes "
                    f"{str(key)!r}); quote it ('{key_node.value}')"
                )
            if not isinstance(key, str):
                key = str(key)
            child = (*path, key)
            if surprise:
                doc["problems"].append(
                    Problem(doc["file"], key_node.start_mark.line + 1, format_json_path(child), surprise)
                )
            if key in out:
                doc["problems"].append(
                    Problem(
                        doc["file"],
                        key_node.start_mark.line + 1,
                        format_json_path(child),
                        f"duplicate key {key!r} (first at line {lines.get(child, 0)})",
                    )
                )
            lines[child] = key_node.start_mark.line + 1
            out[key] = _convert(value_node, loader, child, doc)
        return out
    if isinstance(node, yaml.SequenceNode):
        items = []
        for i, item in enumerate(node.value):
            lines[(*path, i)] = item.start_mark.line + 1
            items.append(_convert(item, loader, (*path, i), doc))
        return items
    return loader.construct_object(node, deep=True)  # pragma: no cover - collections only


def _reader_problem(err: yaml.reader.ReaderError, text: str) -> tuple[int, str, str]:
    """(line, JSON path, message) of a character the YAML reader refuses; ``err.position`` is an
    index into ``text``, told as a line and column instead."""
    pos = min(max(int(err.position), 0), len(text))
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    char = err.character  # the code point (an int; a one-character string in older PyYAML)
    code = ord(char) if isinstance(char, str) and len(char) == 1 else char
    shown = f"U+{code:04X}" if isinstance(code, int) else repr(code)
    return line, "$", f"YAML error: character {shown} at column {column}: {err.reason}"


def parse_yaml(text: str, file: str) -> YamlDoc:
    """Parse ``text`` safely; raises YamlSyntaxError (with ``file:line``) on bad YAML."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        state: dict[str, Any] = {"file": file, "lines": {}, "problems": []}
        if node is None:
            return YamlDoc(file, None, {(): 1})
        state["lines"][()] = node.start_mark.line + 1
        data = _convert(node, loader, (), state)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        last = max(1, len(text.splitlines()))
        line = min(mark.line + 1, last) if mark else 0
        what = str(err.problem or err.context)
        if err.context and err.context_mark and err.problem:
            what += f" ({err.context} started at line {err.context_mark.line + 1})"
        raise YamlSyntaxError(Problem(file, line, "$", f"YAML syntax error: {what}")) from None
    except yaml.reader.ReaderError as err:  # a character YAML refuses (NUL, other controls)
        raise YamlSyntaxError(Problem(file, *_reader_problem(err, text))) from None
    except yaml.YAMLError as err:
        raise YamlSyntaxError(Problem(file, 0, "$", f"YAML error: {err}")) from None
    except RecursionError:
        raise YamlSyntaxError(Problem(file, 0, "$", "YAML error: nested too deeply")) from None
    finally:
        loader.dispose()
    return YamlDoc(file, data, state["lines"], tuple(state["problems"]))


def load_yaml(path: str | Path) -> YamlDoc:
    """Read and parse one YAML file. Raises YamlSyntaxError for syntax errors or unreadable files."""
    file = display_path(path)
    try:
        info = Path(path).stat()
        if not stat.S_ISREG(info.st_mode):  # a FIFO would block, /dev/zero would never end
            raise YamlSyntaxError(Problem(file, 0, "$", "cannot read file: not a regular file"))
        if info.st_size > MAX_FILE_BYTES:
            size = f"{info.st_size} bytes, over the {MAX_FILE_BYTES} limit"
            raise YamlSyntaxError(Problem(file, 0, "$", f"cannot read file: {size}"))
        raw = Path(path).read_bytes()
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        message = f"not UTF-8: byte 0x{raw[err.start]:02x} ({err.reason}); save the file as UTF-8"
        raise YamlSyntaxError(Problem(file, line, "$", message)) from None
    except OSError as err:
        raise YamlSyntaxError(Problem(file, 0, "$", f"cannot read file: {err}")) from None
    return parse_yaml(text, file)
