"""What a process that runs no more runs stops first: the threads evalctl keeps for the next run.

A run leaves two kinds of helpers alive for the next run in the same process (the test suite, a
program using the Python API): the result writer thread (``engine.results.scorer``) and, after a
voice run, the speech workers with their manager thread (``engine.session.voice.pool``). Neither
is the agent's. At the process's end they must go before anything waits for the threads still
alive (``engine.util.aio.exit_process``): the pool's manager thread is not a daemon and is only
told to stop by the interpreter's own shutdown, which comes after that wait, so a voice run's
``evalctl`` waited 5 s at its end and named the thread as left behind.
"""

from __future__ import annotations

import sys


def release_process() -> None:
    """Stop the result writer (its work committed first) and a voice run's speech workers, each
    only when this process loaded it (nothing is imported here: ``evalctl --help`` stays fast).
    Never raises for a helper that was not started."""
    scorer = sys.modules.get("engine.results.scorer")
    if scorer is not None:
        scorer.release_threads()
    pool = sys.modules.get("engine.session.voice.pool")
    if pool is not None:
        pool.shutdown_pool()
