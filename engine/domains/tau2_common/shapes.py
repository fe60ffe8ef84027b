"""Declared record shapes: how tau2 lays out a record when it shows it to a model.

tau2 keeps its DB as pydantic models and shows a record as the model's dump: fields in the
model's declaration order (not the order of the JSON file), optional fields present with null,
keys the model does not declare left out. A shape declares that layout as data, per record type,
so a plain JSON record can be rendered the same way without pydantic:

- :class:`Model`: ordered fields, each with the shape of its value (``None``: a plain value, shown
  as it is), and the fields that default to null when absent.
- :class:`MapOf` / :class:`ListOf`: a dict keyed by id / a list, every value of one shape.
- :class:`Tagged`: one of several models, chosen by a tag field (``source``, ``status``), the way
  pydantic resolves tau2's unions of literal-tagged models.

Shapes are for display only; the DB keeps whatever layout it has (see ``dbhash`` for the hash).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Union


@dataclass(frozen=True)
class Model:
    """A record type: ``fields`` as ``(name, shape or None)`` in declaration order; ``nullable``
    names the fields that are null when absent (tau2's ``Optional[...] = None``)."""

    fields: tuple[tuple[str, Shape | None], ...]
    nullable: frozenset[str] = frozenset()


@dataclass(frozen=True)
class MapOf:
    """A dict from id to records of one shape (key order kept)."""

    item: Shape


@dataclass(frozen=True)
class ListOf:
    """A list of records of one shape."""

    item: Shape


@dataclass(frozen=True)
class Tagged:
    """One of several models, picked by the value of the ``tag`` field; an unknown tag value is
    shown as it is."""

    tag: str
    variants: Mapping[str, Model] = field(default_factory=dict)


Shape = Union[Model, MapOf, ListOf, Tagged]  # noqa: UP007 (a runtime alias used before 3.12)


def model(*fields: str | tuple[str, Shape], nullable: tuple[str, ...] = ()) -> Model:
    """Build a :class:`Model` from field names (plain values) and ``(name, shape)`` pairs.

    Raises ValueError when a nullable name is not a field.
    """
    pairs = tuple((f, None) if isinstance(f, str) else (f[0], f[1]) for f in fields)
    unknown = set(nullable) - {name for name, _ in pairs}
    if unknown:
        raise ValueError(f"nullable fields not declared: {sorted(unknown)}")
    return Model(pairs, frozenset(nullable))


def render(value: Any, shape: Shape | None) -> Any:
    """``value`` laid out as ``shape`` says: new dicts and lists down to plain values, which are
    shared with ``value`` (serialise the result at once; do not keep it). A field that is absent
    and not nullable is left out; a value of the wrong container type is shown as it is."""
    if shape is None or value is None:
        return value
    if isinstance(shape, Model):
        if not isinstance(value, Mapping):
            return value
        out: dict[str, Any] = {}
        for name, sub in shape.fields:
            if name in value:
                out[name] = render(value[name], sub)
            elif name in shape.nullable:
                out[name] = None
        return out
    if isinstance(shape, Tagged):
        tag = value.get(shape.tag) if isinstance(value, Mapping) else None
        variant = shape.variants.get(tag) if isinstance(tag, str) else None
        return value if variant is None else render(value, variant)
    if isinstance(shape, MapOf):
        if not isinstance(value, Mapping):
            return value
        return {k: render(v, shape.item) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [render(v, shape.item) for v in value]
    return value
