"""The gold-playing OpenAI-compatible server of the adapters' tests (``engine.session.gold_model``,
also ``evalctl serve model``), under the name the tests import it by."""

from engine.session.gold_model import USAGE, Answer, GoldLLM

__all__ = ["USAGE", "Answer", "GoldLLM"]
