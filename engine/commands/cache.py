"""``evalctl cache stats|clear [DIR] [--voice]``: what the model-call cache or the voice cache
holds, or empty it."""

from __future__ import annotations

import json
import os

from engine.commands.console import size_text, text_console
from engine.util.callcache import (
    FILE_NAME,
    CallCache,
    UnusableCache,
    cache_dir_from,
    remove_cache_file,
)
from engine.util.errors import OutputError, UsageError


def cache_command(action: str, directory: str | None, as_json: bool = False, voice: bool = False) -> int:
    """The voice cache (:func:`voice_cache_command`) when ``voice`` is set, or when no folder is
    named and ``$EVALCTL_CACHE`` is unset; else the model-call cache of ``directory``: ``stats``:
    entries, bytes and entries per endpoint and model of the cache in ``directory``
    (None: ``$EVALCTL_CACHE``); ``clear``: delete every entry, or remove a broken cache file (not
    SQLite, another schema) and say so. Returns 0. Raises UsageError (exit 2) when the folder holds
    no cache, and for ``stats`` when its file is not a usable cache."""
    folder = cache_dir_from(directory)
    if voice or folder is None:
        if directory is not None and voice:
            raise UsageError("evalctl cache --voice: its folder is $EVALCTL_VOICE_CACHE, not DIR")
        return voice_cache_command(action, as_json)
    if not (folder / FILE_NAME).is_file():
        raise UsageError(f"cache {action}: {folder} holds no model-call cache ({FILE_NAME})")
    out = text_console()
    try:
        cache = CallCache(folder)
    except UnusableCache as err:
        if action != "clear":
            raise
        try:
            gone = remove_cache_file(folder)
        except OSError as oserr:
            raise OutputError(f"cannot remove {folder / FILE_NAME}: {oserr.strerror or oserr}") from None
        names = ", ".join(p.name for p in gone)
        out.print(
            f"cache {folder}: not a usable cache ({err.reason}); removed {names}",
            markup=False,
            highlight=False,
        )
        return 0
    try:
        if action == "clear":
            removed = cache.clear()
            out.print(f"cache {folder}: {removed} entries removed", markup=False, highlight=False)
            return 0
        stats = cache.stats()
    finally:
        cache.close()
    if as_json:
        out.print(json.dumps(stats, indent=2), markup=False, highlight=False, soft_wrap=True)
        return 0
    out.print(
        f"cache {folder}: {stats['entries']} entries, {size_text(stats['bytes'])}",
        markup=False,
        highlight=False,
    )
    for name, count in stats["models"].items():
        out.print(f"  {name}: {count}", markup=False, highlight=False)
    return 0


def voice_cache_command(action: str, as_json: bool = False) -> int:
    """``stats`` / ``clear`` of the voice cache (``engine.session.voice.cache``: the user cache
    dir, or ``$EVALCTL_VOICE_CACHE``). Returns 0 (the default folder before any voice run: empty);
    raises UsageError (exit 2) when the cache is off or the folder ``$EVALCTL_VOICE_CACHE`` names
    holds none, OutputError when it cannot be opened."""
    from engine.session.voice.cache import VOICE_CACHE_ENV, VoiceCache, voice_cache_dir

    folder = voice_cache_dir()
    if folder is None:
        raise UsageError(f"cache {action}: the voice cache is off (${VOICE_CACHE_ENV})")
    if not (folder / "cache.db").is_file():  # diskcache's index: never made in a folder that has none
        if os.environ.get(VOICE_CACHE_ENV, "").strip():  # a folder the user named: a typo is bad input
            raise UsageError(f"cache {action}: {folder} holds no voice cache")
        empty = (  # the default folder before any voice run: empty, nothing wrong
            json.dumps({"entries": 0, "bytes": 0}, indent=2)
            if as_json and action == "stats"
            else f"voice cache {folder}: empty (no voice run has cached anything yet)"
        )
        text_console().print(empty, markup=False, highlight=False, soft_wrap=True)
        return 0
    cache, out = VoiceCache(folder), text_console()
    try:
        if action == "clear":
            removed = cache.clear()
            out.print(f"voice cache {folder}: {removed} entries removed", markup=False, highlight=False)
            return 0
        stats = cache.stats()
    except RuntimeError as err:
        raise OutputError(f"voice cache {folder}: {err}") from None
    finally:
        cache.close()
    if as_json:
        out.print(json.dumps(stats, indent=2), markup=False, highlight=False, soft_wrap=True)
    else:
        line = f"voice cache {folder}: {stats['entries']} entries, {size_text(stats['bytes'])}"
        out.print(line, markup=False, highlight=False)
    return 0
