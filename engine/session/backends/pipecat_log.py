"""pipecat's loguru logs, off unless ``EVALCTL_PIPECAT_LOG=1``: pipecat prints a version banner
(``INFO | pipecat:<module> - ... Pipecat 1.14.0``) when it is first imported and logs every LLM
request's whole context at DEBUG. Both the ``pipecat:`` and the ``rtvi+ws://`` schemes call
:func:`quiet_pipecat` before they import anything of pipecat."""

from __future__ import annotations

import os

#: The environment variable that keeps pipecat's logs (value ``1``).
LOG_ENV = "EVALCTL_PIPECAT_LOG"


def quiet_pipecat() -> None:
    """Disable loguru's ``pipecat`` loggers (the package and its modules) unless
    ``EVALCTL_PIPECAT_LOG=1``. Call it before the first ``import pipecat``: the banner is
    printed by that import. Does nothing when loguru (a pipecat dependency) is not installed."""
    if os.environ.get(LOG_ENV) == "1":
        return
    try:
        from loguru import logger
    except ImportError:
        return
    logger.disable("pipecat")
