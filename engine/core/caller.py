"""How the simulated caller of a voice run sounds and behaves: its voice, the perturbation of
the line, and when it talks into the agent's speech (barge-ins, backchannels).

Pure data and parsing (no audio here): the run's options (``--caller-voice``, ``--perturb``) and a
scenario's ``caller:`` block (schemas/scenario.schema.json) are read into a :class:`CallerStyle`;
``engine.session.voice`` applies it (``perturb``: the sound, ``link``: the timeline).

The perturbation grammar (:func:`parse_perturbation`) is a comma-separated list, each item at
most once: ``clean`` (nothing; alone), ``telephone`` (or ``tel``: 8 kHz G.711 μ-law and back),
``snr=DB`` (white noise DB decibels below the speech, -10..60), ``speed=F`` (tempo factor,
0.5..2, pitch kept), ``volume=DB`` (gain in dB, -40..20). Example: ``snr=10,telephone,speed=1.2``.

Direction: the whole perturbation applies to the caller's speech (what the agent hears); its
*line* part (``telephone``, ``snr``; :attr:`Perturbation.line`) also applies to the agent's speech
as the caller and the run's recogniser hear it, since a phone line degrades both directions;
speed and volume are the caller's own manner of speaking (:attr:`Perturbation.manner`) and leave
the agent's audio alone. The line sits between the two sides: each side's timing (voice activity,
response latency, overlap, silences) is read from its audio as it sent it, before the line, so
the line's noise is never charged to the agent (``engine.session.voice.link``).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: What each perturbation item accepts: (low, high) for a number.
_BOUNDS = {"snr": (-10.0, 60.0), "speed": (0.5, 2.0), "volume": (-40.0, 20.0)}
PERTURB_HELP = (
    "comma-separated, each at most once: telephone (8 kHz G.711 u-law), snr=DB (white noise, "
    "-10..60 dB below the speech), speed=F (tempo, 0.5..2), volume=DB (gain, -40..20); or clean"
)


@dataclass(frozen=True)
class Perturbation:
    """What to change: ``speed`` factor (1 = as synthesised), ``volume_db`` gain, ``telephone``
    (8 kHz μ-law round trip), ``snr_db`` (None: no noise)."""

    speed: float = 1.0
    volume_db: float = 0.0
    telephone: bool = False
    snr_db: float | None = None

    @property
    def label(self) -> str:
        """A short name: ``clean``, or the changes joined (``tel+snr10+x1.2``)."""
        parts = ["tel"] if self.telephone else []
        if self.snr_db is not None:
            parts.append(f"snr{self.snr_db:g}")
        if self.speed != 1.0:
            parts.append(f"x{self.speed:g}")
        if self.volume_db:
            parts.append(f"{self.volume_db:+g}dB")
        return "+".join(parts) or "clean"

    @property
    def spec(self) -> str:
        """The canonical text of the grammar (:func:`parse_perturbation` reads it back):
        ``clean`` or e.g. ``telephone,snr=10,speed=1.2,volume=-6``."""
        parts = ["telephone"] if self.telephone else []
        if self.snr_db is not None:
            parts.append(f"snr={self.snr_db:g}")
        if self.speed != 1.0:
            parts.append(f"speed={self.speed:g}")
        if self.volume_db:
            parts.append(f"volume={self.volume_db:g}")
        return ",".join(parts) or "clean"

    @property
    def clean(self) -> bool:
        """True when it changes nothing."""
        return self == Perturbation()

    @property
    def line(self) -> Perturbation:
        """The part a phone line applies to both directions: ``telephone`` and ``snr_db``."""
        return Perturbation(telephone=self.telephone, snr_db=self.snr_db)

    @property
    def manner(self) -> Perturbation:
        """The caller's own manner of speaking: ``speed`` and ``volume_db`` (the rest is the line's)."""
        return Perturbation(speed=self.speed, volume_db=self.volume_db)


def parse_perturbation(text: str) -> Perturbation:
    """The :class:`Perturbation` written ``text`` (the grammar of the module docstring). Raises
    ValueError with one line naming the item at fault."""
    items = [p.strip() for p in str(text).split(",")]
    if not any(items):
        raise ValueError(f"empty perturbation ({PERTURB_HELP})")
    seen: set[str] = set()
    values: dict[str, Any] = {}
    for item in items:
        if not item:
            raise ValueError(f"empty item in perturbation {text!r}")
        key, _, raw = item.partition("=")
        key = key.strip().lower()
        key = "telephone" if key == "tel" else key
        if key in seen:
            raise ValueError(f"perturbation {text!r} names {key} twice")
        seen.add(key)
        if key in ("clean", "telephone"):
            if raw:
                raise ValueError(f"perturbation item {item!r}: {key} takes no value")
            values[key] = True
            continue
        if key not in _BOUNDS:
            raise ValueError(f"unknown perturbation item {item!r} ({PERTURB_HELP})")
        try:
            number = float(raw)
        except ValueError:
            raise ValueError(f"perturbation item {item!r}: {key} needs a number, as {key}=10") from None
        low, high = _BOUNDS[key]
        if not math.isfinite(number) or not low <= number <= high:
            raise ValueError(f"perturbation item {item!r}: {key} must be within {low:g}..{high:g}")
        values[key] = number
    if "clean" in values and len(values) > 1:
        raise ValueError(f"perturbation {text!r}: clean cannot be combined with other items")
    return Perturbation(
        speed=float(values.get("speed", 1.0)),
        volume_db=float(values.get("volume", 0.0)),
        telephone=bool(values.get("telephone", False)),
        snr_db=values.get("snr"),
    )


def _draw(seed: int, turn: int) -> float:
    """A number in [0, 1) fixed by ``seed`` and ``turn`` (the same in every run)."""
    digest = hashlib.sha256(f"{seed}:{turn}".encode()).digest()
    return int.from_bytes(digest[:8], "little") / 2**64


@dataclass(frozen=True)
class BargeIn:
    """The caller starts its next words ``after_ms`` into the agent's speech of the listed agent
    ``turns`` (as numbered in ``voice.json``), or of each agent turn with ``probability`` (drawn
    from ``seed`` and the turn number, so a run is reproducible). An agent turn whose speech is
    shorter than ``after_ms`` is not interrupted."""

    after_ms: float
    turns: tuple[int, ...] = ()
    probability: float = 0.0
    seed: int = 0

    def scheduled(self, turn: int) -> bool:
        """True when the caller barges into agent turn ``turn``."""
        if turn in self.turns:
            return True
        return self.probability > 0 and _draw(self.seed, turn) < self.probability


@dataclass(frozen=True)
class Backchannel:
    """During each agent turn whose speech lasts ``min_agent_ms`` or more, the caller says one of
    ``words`` (in turn, by the turn number) ``at`` (a fraction, 0..1) of the way into it. A
    backchannel is not a barge-in: it is measured as caller speech over the agent (overlap), and
    counted apart (``voice.json`` ``caller``)."""

    words: tuple[str, ...] = ("mm-hmm", "okay")
    min_agent_ms: float = 4000.0
    at: float = 0.5

    def word(self, turn: int) -> str:
        """What the caller says during agent turn ``turn``."""
        return self.words[turn % len(self.words)]


@dataclass(frozen=True)
class CallerStyle:
    """One caller: ``voice`` (an espeak-ng voice, e.g. ``en-us+f3``; None: the language's
    default), ``perturbation`` (None: clean), ``barge_in`` and ``backchannel`` (None: never)."""

    voice: str | None = None
    perturbation: Perturbation | None = None
    barge_in: BargeIn | None = None
    backchannel: Backchannel | None = None

    def over(self, base: CallerStyle) -> CallerStyle:
        """This style with ``base``'s value wherever this one sets none (a scenario's ``caller:``
        over the run's options)."""
        return CallerStyle(
            self.voice or base.voice,
            self.perturbation if self.perturbation is not None else base.perturbation,
            self.barge_in or base.barge_in,
            self.backchannel or base.backchannel,
        )

    def to_json(self) -> dict[str, Any]:
        """The style as ``voice.json`` ``caller`` records it."""
        body: dict[str, Any] = {
            "voice": self.voice,
            "perturbation": None if self.perturbation is None else self.perturbation.spec,
        }
        if self.barge_in is not None:
            b = self.barge_in
            body["barge_in"] = {
                "after_ms": b.after_ms,
                "turns": list(b.turns),
                "probability": b.probability,
                "seed": b.seed,
            }
        if self.backchannel is not None:
            c = self.backchannel
            body["backchannel"] = {"words": list(c.words), "min_agent_ms": c.min_agent_ms, "at": c.at}
        return body


def caller_from_spec(block: Mapping[str, Any]) -> CallerStyle:
    """The :class:`CallerStyle` of a scenario's ``caller:`` block (already checked against
    schemas/scenario.schema.json). Raises ValueError for a ``perturb`` the grammar refuses, with
    the key at fault first (``perturb: ...``)."""
    perturbation = None
    if block.get("perturb") is not None:
        try:
            perturbation = parse_perturbation(block["perturb"])
        except ValueError as err:
            raise ValueError(f"perturb: {err}") from None
    barge = block.get("barge_in")
    back = block.get("backchannel")
    return CallerStyle(
        voice=block.get("voice"),
        perturbation=perturbation,
        barge_in=None
        if barge is None
        else BargeIn(
            after_ms=float(barge.get("after_ms", 800)),
            turns=tuple(int(t) for t in barge.get("turns", ())),
            probability=float(barge.get("probability", 0.0)),
            seed=int(barge.get("seed", 0)),
        ),
        backchannel=None
        if back is None
        else Backchannel(
            words=tuple(back.get("words", Backchannel.words)),
            min_agent_ms=float(back.get("min_agent_ms", Backchannel.min_agent_ms)),
            at=float(back.get("at", Backchannel.at)),
        ),
    )


def dealt_voice(voices: Sequence[str], scenario: str) -> str | None:
    """The voice of ``voices`` that scenario ``scenario`` gets (None when the list is empty): picked
    by a hash of its name, so a scenario has the same caller in every run, whatever is selected,
    sharded or resumed."""
    if not voices:
        return None
    digest = hashlib.sha256(scenario.encode("utf-8")).digest()
    return voices[int.from_bytes(digest[:8], "little") % len(voices)]
