"""Put one ``<suite>-<date>.tgz`` archive that a device run returned under the raw-data folder, kept small.

    python3 benchmarks/unpack.py ARCHIVE DATA_FOLDER

Every file over 4 KB is stored gzipped (``NAME.gz``; ``zcat`` reads it, and ``data_file`` in lib.sh hands a suite
the plain file). A file already there is never overwritten: an identical one is skipped, a different one comes in
as ``NAME-2.EXT`` (``-3`` and so on), so the folder holds no backup copies of one file under hidden names.
"""

from __future__ import annotations

import gzip
import itertools
import sys
import tarfile
from pathlib import Path, PurePosixPath

GZIP_OVER = 4096


def stored_bytes(path: Path) -> bytes:
    """The plain bytes a stored file holds (gunzipped where the name ends in .gz)."""
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


def destination(folder: Path, relative: PurePosixPath, data: bytes) -> Path | None:
    """Where the member goes, or None where an identical copy is already stored."""
    stem, dot, ext = relative.name.partition(".")
    for n in itertools.count(1):
        name = relative.name if n == 1 else f"{stem}-{n}{dot}{ext}"
        plain = folder / relative.parent / name
        found = next((p for p in (plain, plain.with_name(name + ".gz")) if p.is_file()), None)
        if found is None:
            return plain.with_name(name + ".gz") if len(data) > GZIP_OVER else plain
        if stored_bytes(found) == data:
            return None
    raise AssertionError("unreachable: itertools.count never ends")


def unpack(archive: Path, folder: Path) -> int:
    """Store the archive's files under ``folder``; the number stored."""
    stored = skipped = 0
    with tarfile.open(archive, "r:gz") as tar:
        members = tar.getmembers()
        for member in members:
            relative = PurePosixPath(member.name)
            if not member.isfile() or relative.is_absolute() or ".." in relative.parts:
                continue
            handle = tar.extractfile(member)
            assert handle is not None  # a regular file always has its bytes
            data = handle.read()
            target = destination(folder, relative, data)
            if target is None:
                skipped += 1
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(gzip.compress(data, mtime=0) if target.suffix == ".gz" else data)
            stored += 1
    files = [m.name for m in members if m.isfile()]
    where = "/".join(files[0].split("/")[:2]) if files else ""
    print(f"unpacked {archive.name} into {folder}/{where}: {stored} files stored, {skipped} already there")
    return stored


def main() -> int:
    if len(sys.argv) != 3 or not Path(sys.argv[1]).is_file():
        print("usage: benchmarks/unpack.py ARCHIVE.tgz DATA_FOLDER (the archive must exist)", file=sys.stderr)
        return 2
    unpack(Path(sys.argv[1]), Path(sys.argv[2]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
