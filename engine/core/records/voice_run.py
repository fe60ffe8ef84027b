"""``summary.json`` ``voice``: the run-level voice figures of a voice run (summary version 5).

Built by ``engine.scoring.voice_figures.voice_figures`` from the results' ``metrics.json``
``voice`` summaries. Times are milliseconds. A :class:`Spread` pools every agent turn of the run
(percentiles by nearest rank) and gives the 95 % interval of the mean per session (the session is
the unit resampled: turns of one call are not independent). Rates are fractions with their
95 % interval (``engine.core.records.intervals.Interval``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.core.records.fields import RecordError, exact_keys, get
from engine.core.records.intervals import Interval, interval_json

_NUM = (int, float)
_NUM_OR_NONE = (int, float, None)


@dataclass(frozen=True)
class Spread:
    """One per-turn measure over the run: ``turns`` counted, ``mean`` / ``p50`` / ``p90`` /
    ``p95`` / ``max`` (None when no turn has it), ``ci`` the interval of the per-session mean."""

    turns: int
    mean: float | None
    p50: float | None
    p90: float | None
    p95: float | None
    max: float | None
    ci: Interval | None

    KEYS = ("turns", "mean", "p50", "p90", "p95", "max", "ci")

    def to_json(self) -> dict[str, Any]:
        body = {k: getattr(self, k) for k in self.KEYS}
        body["ci"] = interval_json(self.ci)
        return body

    @classmethod
    def from_json(cls, body: Any, what: str) -> Spread:
        if not isinstance(body, Mapping):
            raise RecordError(f"{what}: not an object")
        exact_keys(body, cls.KEYS, what)
        return cls(
            get(body, "turns", int),
            get(body, "mean", *_NUM_OR_NONE),
            get(body, "p50", *_NUM_OR_NONE),
            get(body, "p90", *_NUM_OR_NONE),
            get(body, "p95", *_NUM_OR_NONE),
            get(body, "max", *_NUM_OR_NONE),
            Interval.from_json(body["ci"], f"{what}.ci"),
        )


@dataclass(frozen=True)
class Share:
    """``hits`` of ``total`` (a rate, None when ``total`` is 0) and its 95 % interval. ``unit``
    names what ``total`` counts (``entities``, ``words``); ``sessions`` how many audio sessions
    they came from and ``interval_by`` what the interval resamples: ``session`` (the pooled
    rate, sessions as the unit: the items of one call are not independent; a WER's interval is
    not clipped at 1), the ``unit`` itself (e.g. ``entities``: Wilson's interval over the pooled
    items, when one session or sessions all at the same rate leave nothing to resample) or, in
    older summaries, ``session mean`` (a WER's interval was then of the mean of the per-session
    WERs). The three are None in a summary written before they were
    recorded."""

    hits: int
    total: int
    rate: float | None
    ci: Interval | None
    unit: str | None = None
    sessions: int | None = None
    interval_by: str | None = None

    KEYS = ("hits", "total", "rate", "ci")
    OPTIONAL = ("unit", "sessions", "interval_by")

    def to_json(self) -> dict[str, Any]:
        body = {"hits": self.hits, "total": self.total, "rate": self.rate, "ci": interval_json(self.ci)}
        body.update({k: getattr(self, k) for k in self.OPTIONAL if getattr(self, k) is not None})
        return body

    @classmethod
    def from_json(cls, body: Any, what: str) -> Share:
        if not isinstance(body, Mapping):
            raise RecordError(f"{what}: not an object")
        exact_keys(body, cls.KEYS, what, optional=cls.OPTIONAL)
        return cls(
            get(body, "hits", int),
            get(body, "total", int),
            get(body, "rate", *_NUM_OR_NONE),
            Interval.from_json(body["ci"], f"{what}.ci"),
            get(body, "unit", str, None) if "unit" in body else None,
            get(body, "sessions", int, None) if "sessions" in body else None,
            get(body, "interval_by", str, None) if "interval_by" in body else None,
        )


@dataclass(frozen=True)
class VoiceFigures:
    """The voice figures of a run: ``sessions`` audio sessions with a voice summary;
    ``latency_ms`` response latency (end of the caller's speech to the start of the agent's, from
    the waveform), ``ttfa_ms`` time to first audio (the engine's clock); ``talking_over`` agent
    turns that started before the caller finished, ``barge_ins`` / ``barge_ins_yielded`` the
    caller speaking into the agent and the agent stopping for it, ``long_silences``; ``wer`` the
    corpus word error rate (``hits`` = edits, ``total`` = reference words; None without a
    recogniser), ``entities`` the key entities heard as meant (None without a recogniser);
    ``callers`` the sessions per caller synthesiser (``espeak-ng:en-us+f3[tel+snr10]``: its voice
    and perturbation), written only when a run set a caller voice or perturbation; ``matched``
    the transcribed agent turns whose transcript is nearer their own line than any other (the
    gate ``speech_matches_text``'s rule; None without a recogniser, or in a summary written before
    it was recorded)."""

    sessions: int
    latency_ms: Spread
    ttfa_ms: Spread
    talking_over: int
    barge_ins: int
    barge_ins_yielded: int
    long_silences: int
    wer: Share | None
    entities: Share | None
    callers: dict[str, int] | None = None
    matched: Share | None = None

    KEYS = (
        "sessions",
        "latency_ms",
        "ttfa_ms",
        "talking_over",
        "barge_ins",
        "barge_ins_yielded",
        "long_silences",
        "wer",
        "entities",
    )

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {k: getattr(self, k) for k in self.KEYS}
        for k in ("latency_ms", "ttfa_ms", "wer", "entities"):
            body[k] = None if body[k] is None else body[k].to_json()
        if self.callers is not None:
            body["callers"] = dict(self.callers)
        if self.matched is not None:
            body["matched"] = self.matched.to_json()
        return body

    @classmethod
    def from_json(cls, body: Any) -> VoiceFigures:
        if not isinstance(body, Mapping):
            raise RecordError("voice: not an object")
        exact_keys(body, cls.KEYS, "voice", optional=("callers", "matched"))
        callers = body.get("callers")
        if callers is not None and (
            not isinstance(callers, Mapping)
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in callers.values())
        ):
            raise RecordError("voice.callers: not an object of session counts")
        return cls(
            sessions=get(body, "sessions", int),
            latency_ms=Spread.from_json(body["latency_ms"], "voice.latency_ms"),
            ttfa_ms=Spread.from_json(body["ttfa_ms"], "voice.ttfa_ms"),
            talking_over=get(body, "talking_over", int),
            barge_ins=get(body, "barge_ins", int),
            barge_ins_yielded=get(body, "barge_ins_yielded", int),
            long_silences=get(body, "long_silences", int),
            wer=None if body["wer"] is None else Share.from_json(body["wer"], "voice.wer"),
            entities=None
            if body["entities"] is None
            else Share.from_json(body["entities"], "voice.entities"),
            callers=None if callers is None else {str(k): int(v) for k, v in callers.items()},
            matched=None
            if body.get("matched") is None
            else Share.from_json(body["matched"], "voice.matched"),
        )
