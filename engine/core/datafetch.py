"""``make data``: fill a data root with the pinned upstream releases and verify SHA-256 sums.

The releases are those of ``upstream_pins.json``: eva 0.1.3 and 2.1.0, tau2-bench 17e07b1 and v0.2.0,
and the NeMo voice-agent scenarios (1a83139). Files are taken from a local folder in upstream layout
(``--source``, e.g. ``../shared``) when it holds the release, otherwise from the pinned commit's
archive on GitHub. A release may list ``not_upstream`` files (a README written for the copy, a file
derived from upstream code such as tau2's ``derived/tool_schemas.json``); they exist only in a local
copy, so a download cannot supply them and says so in one warning line (exit 0: eva's releases
are complete without them, and a spec reading a missing file names it when loaded). Every file
is checked against ``upstream_pins.json``; a mismatch in a freshly filled root is an error (exit 1).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tarfile
import urllib.request
from pathlib import Path

from engine.core.dataroot import check_release, pins

ARCHIVE_URL = "https://codeload.github.com/{repo}/tar.gz/{commit}"


def copy_release(source: Path, dest: Path, release: str) -> None:
    """Copy the pinned files of ``release`` from ``source/release`` to ``dest/release``.

    Files are written with user-writable modes even when the source is read-only.
    """
    for rel in pins()[release]["files"]:
        src = source / release / rel
        out = dest / release / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        if out.exists():
            out.chmod(0o644)
        shutil.copyfile(src, out)


def downloadable(release: str) -> list[str]:
    """The pinned files of ``release`` that upstream's archive holds (all but ``not_upstream``)."""
    spec = pins()[release]
    local_only = set(spec.get("not_upstream", ()))
    return [rel for rel in spec["files"] if rel not in local_only]


def download_release(dest: Path, release: str, url_template: str = ARCHIVE_URL) -> None:
    """Stream the pinned commit's archive and extract the downloadable pinned files into ``dest/release``.

    Files listed as ``not_upstream`` are never taken from the archive, even when it holds a file at
    that path (upstream's own README.md is a different file from the copy's).
    """
    spec = pins()[release]
    url = url_template.format(repo=spec["repo"], commit=spec["commit"])
    wanted = set(downloadable(release))
    with urllib.request.urlopen(url, timeout=120) as resp, tarfile.open(fileobj=resp, mode="r|gz") as tar:
        for member in tar:
            parts = member.name.split("/", 1)
            if len(parts) == 2 and parts[1] in wanted and member.isfile():
                out = dest / release / parts[1]
                out.parent.mkdir(parents=True, exist_ok=True)
                fh = tar.extractfile(member)
                assert fh is not None
                out.write_bytes(fh.read())


def _label(release: str) -> str:
    """``tag`` when the pin has one, else the short commit."""
    spec = pins()[release]
    return str(spec.get("tag") or f"commit {spec['commit'][:7]}")


def fill(source: Path | None, dest: Path, url_template: str | None = None) -> int:
    """Fill ``dest`` with every pinned release; returns a process exit code (0 ok, 1 failed).

    A failed download or a copy whose sums differ (exit 1), and a ``not_upstream`` file that a
    download could not supply (a warning), are reported in one line on stderr, never a traceback.
    """
    status = 0
    for release in sorted(pins()):
        if not check_release(dest, release):
            print(f"data: {dest / release} already matches the pinned sums")
            continue
        downloaded = False
        if source is not None and (source / release).is_dir():
            print(f"data: copying {release} from {source / release}")
            copy_release(source, dest, release)
        else:
            print(f"data: downloading {release} ({_label(release)}) from GitHub")
            try:
                download_release(dest, release, url_template or ARCHIVE_URL)
            except (OSError, tarfile.TarError) as exc:
                reason = getattr(exc, "reason", None) or exc
                print(
                    f"data: cannot download {release}: {reason}; set EVA_SOURCE to a folder holding "
                    f"{release}/ (e.g. `make setup EVA_SOURCE=/path/to/eva-data`)",
                    file=sys.stderr,
                )
                status = 1
                continue
            downloaded = True
        bad = check_release(dest, release)
        local_only = set(pins()[release].get("not_upstream", ()))
        absent = [rel for rel in bad if downloaded and rel in local_only]
        differ = [rel for rel in bad if rel not in absent]
        if absent:  # a warning: the other releases (eva's) work; the spec that needs them says so
            print(
                f"data: warning: {release}: {len(absent)} file(s) are not in upstream's archive and "
                f"cannot be downloaded: {', '.join(absent)}; copy them from a folder holding "
                f"{release}/ (EVA_SOURCE) to use the domains that read them",
                file=sys.stderr,
            )
        if differ:
            shown = ", ".join(differ[:5])
            print(
                f"data: {release}: {len(differ)} file(s) differ from the pinned sums: {shown}",
                file=sys.stderr,
            )
            status = 1
        elif not absent:
            print(f"data: {release}: {len(pins()[release]['files'])} files verified (SHA-256)")
        else:
            verified = len(pins()[release]["files"]) - len(absent)
            print(f"data: {release}: {verified} downloaded files verified (SHA-256)")
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--source", default="", help="local folder holding the pinned releases (eva-0.1.3/, tau2-17e07b1/...)"
    )
    parser.add_argument("--dest", default="data", help="data root to fill (default ./data)")
    args = parser.parse_args(argv)
    source = Path(args.source).resolve() if args.source and Path(args.source).is_dir() else None
    if args.source and source is None:
        print(f"data: source folder {args.source} does not exist; falling back to the pinned downloads")
    return fill(source, Path(args.dest).resolve())


if __name__ == "__main__":
    raise SystemExit(main())
