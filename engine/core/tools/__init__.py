"""What tool handlers work with: the call context (``context``), argument parsing and checks
(``arguments``), write-set declarations and copy-on-write session DBs (``writeset``) and the
harness handlers (``harness``). They import nothing of the engine outside this package; the runtime that
dispatches a session's calls is :mod:`engine.core.toolruntime`."""
