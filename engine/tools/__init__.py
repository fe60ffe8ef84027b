"""What tool handlers work with: the call context (``context``), argument parsing and checks
(``arguments``), write-set declarations and copy-on-write session DBs (``writeset``) and the
harness handlers (``harness``). These modules import no other engine module; the runtime that
dispatches a session's calls is :mod:`engine.toolruntime`."""
