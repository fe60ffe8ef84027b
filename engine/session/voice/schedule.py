"""When the caller talks into the agent's speech: the scheduled barge-ins and backchannels of a
caller (``engine.core.caller``) placed on the session's media timeline.

Sessions are turn-based, so the caller's next words exist only once the agent's turn is over;
what a barge-in changes is *where* they sit on the media timeline: they start ``after_ms`` into
the agent's speech instead of after it, and go to the agent as the next turn's audio (protocol
v2: its frames and ``turn.request.audio.start_ms`` say they began while the agent spoke). A
backchannel ("mm-hmm") is placed ``at`` of the way into a long agent turn and sent first in
the same turn's audio. The waveform metrics (``engine.session.voice.metrics``) then measure
them like any other overlap: the barge-in, whether the agent yielded, the talking over.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.core.caller import CallerStyle
from engine.session.voice.timeline import Utterance


@dataclass(frozen=True)
class Interjections:
    """What the caller's next audio does to the agent's last turn ``agent_turn``:
    ``barge_in_ms`` the media time its words start (None: after the agent, as usual);
    ``backchannel`` ``(word, media time)`` said during it first (None: none)."""

    agent_turn: int = -1
    barge_in_ms: float | None = None
    backchannel: tuple[str, float] | None = None


def plan_interjections(caller: CallerStyle, agent: Utterance | None, has_words: bool) -> Interjections:
    """The caller's interjections into ``agent`` (the agent's latest utterance; None before it
    spoke), found from its speech by voice activity detection: a barge-in when
    ``caller.barge_in`` schedules one for that turn, its speech lasts more than ``after_ms`` and
    the caller has words to say (``has_words``); a backchannel when ``caller.backchannel`` is set,
    the agent's speech lasts ``min_agent_ms`` or more and no barge-in comes before it."""
    if agent is None or (caller.barge_in is None and caller.backchannel is None):
        return Interjections()
    speech = agent.speech()
    if speech is None:
        return Interjections(agent.turn)
    start, end = speech
    barge_ms = None
    b = caller.barge_in
    if b is not None and has_words and b.scheduled(agent.turn) and start + b.after_ms < end:
        barge_ms = start + b.after_ms
    back = None
    c = caller.backchannel
    if c is not None and end - start >= c.min_agent_ms:
        at_ms = start + c.at * (end - start)
        if barge_ms is None or at_ms < barge_ms:
            back = (c.word(agent.turn), at_ms)
    return Interjections(agent.turn, barge_ms, back)
