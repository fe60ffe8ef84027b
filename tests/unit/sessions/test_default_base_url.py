"""Without ``--base-url`` and ``$OPENAI_BASE_URL``, an ``openai:`` side asks OpenAI's own API (the
client's default), and the README says so (before: it said only that the default is
``$OPENAI_BASE_URL``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.session.backends.openai_chat import OpenAIFactory

README = Path(__file__).resolve().parents[3] / "README.md"
DEFAULT = "https://api.openai.com/v1"


def test_the_default_endpoint_is_openais_and_the_readme_says_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    factory = OpenAIFactory("gpt-x")
    assert str(factory.client.base_url).rstrip("/") == DEFAULT
    text = " ".join(README.read_text(encoding="utf-8").split())
    assert f"with neither set, `openai:` models are asked at **{DEFAULT}**" in text
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert str(OpenAIFactory("gpt-x").client.base_url).rstrip("/") == "http://127.0.0.1:9/v1"
