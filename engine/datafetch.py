"""``make data``: fill a data root with the pinned upstream eva releases and verify SHA-256 sums.

Takes the files from a local folder in upstream layout (``--source``, e.g. ``../shared``) when it
exists, otherwise downloads the pinned tags from GitHub. Every file is checked against
``upstream_pins.json``; a mismatch in a freshly filled root is an error (exit 1).
"""

from __future__ import annotations

import argparse
import io
import shutil
import sys
import tarfile
import urllib.request
from pathlib import Path

from engine.dataroot import check_release, pins

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


def download_release(dest: Path, release: str, url_template: str = ARCHIVE_URL) -> None:
    """Download the pinned commit's archive and extract the pinned files into ``dest/release``."""
    spec = pins()[release]
    url = url_template.format(repo=spec["repo"], commit=spec["commit"])
    with urllib.request.urlopen(url, timeout=120) as resp:
        blob = resp.read()
    wanted = set(spec["files"])
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        for member in tar.getmembers():
            parts = member.name.split("/", 1)
            if len(parts) == 2 and parts[1] in wanted and member.isfile():
                out = dest / release / parts[1]
                out.parent.mkdir(parents=True, exist_ok=True)
                fh = tar.extractfile(member)
                assert fh is not None
                out.write_bytes(fh.read())


def fill(source: Path | None, dest: Path, url_template: str | None = None) -> int:
    """Fill ``dest`` with every pinned release; returns a process exit code (0 ok, 1 failed).

    A failed download or a copy whose sums differ is reported in one line on stderr, never as a
    traceback.
    """
    status = 0
    for release in sorted(pins()):
        if not check_release(dest, release):
            print(f"data: {dest / release} already matches the pinned sums")
            continue
        if source is not None and (source / release).is_dir():
            print(f"data: copying {release} from {source / release}")
            copy_release(source, dest, release)
        else:
            print(f"data: downloading {release} ({pins()[release]['tag']}) from GitHub")
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
        bad = check_release(dest, release)
        if bad:
            print(f"data: {release}: {len(bad)} file(s) differ from the pinned sums: {', '.join(bad[:5])}",
                  file=sys.stderr)
            status = 1
        else:
            print(f"data: {release}: {len(pins()[release]['files'])} files verified (SHA-256)")
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--source", default="", help="local folder holding eva-0.1.3/ and eva-2.1.0/")
    parser.add_argument("--dest", default="data", help="data root to fill (default ./data)")
    args = parser.parse_args(argv)
    source = Path(args.source).resolve() if args.source and Path(args.source).is_dir() else None
    if args.source and source is None:
        print(f"data: source folder {args.source} does not exist; falling back to the pinned downloads")
    return fill(source, Path(args.dest).resolve())


if __name__ == "__main__":
    raise SystemExit(main())
