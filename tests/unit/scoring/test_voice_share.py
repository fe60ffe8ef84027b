"""A voice share's interval says what it resamples: sessions, or (one session, or every session at
the same rate: nothing to resample between sessions) the items themselves. Before, one session's
2 of 35 entities read "[95% CI 1.6-18.6%, by session]": Wilson's interval over the 35 entities,
labelled as if by session (a new user's finding)."""

from __future__ import annotations

from engine.scoring.stats import wilson
from engine.scoring.voice_figures import _share, share_text


def test_one_sessions_entities_are_labelled_as_the_unit_not_by_session() -> None:
    one = _share([(2, 35)], "entities")
    assert one is not None and one.ci is not None
    expected = wilson(2, 35)
    assert expected is not None and (one.ci.low, one.ci.high) == (expected.low, expected.high)
    assert one.interval_by == "entities"
    assert share_text(one) == (
        "5.7% (2/35 entities in 1 session) "
        "[95% CI 1.6-18.6%, entities as the unit (1 session: no interval by session)]"
    )


def test_sessions_at_the_same_rate_say_so_and_differing_sessions_are_by_session() -> None:
    same = _share([(1, 2), (2, 4)], "entities")
    assert same is not None and same.interval_by == "entities"
    assert share_text(same).endswith(
        "entities as the unit (every session at the same rate: no interval by session)]"
    )
    spread = _share([(0, 3), (3, 3), (1, 4)], "entities")
    assert spread is not None and spread.interval_by == "session" and spread.ci is not None
    assert spread.ci.method == "bootstrap" and share_text(spread).endswith(", by session]")
    # one item per session: Wilson over sessions is by session
    single = _share([(1, 1), (0, 1), (1, 1)], "turns")
    assert (
        single is not None
        and single.interval_by == "session"
        and share_text(single).endswith(", by session]")
    )
