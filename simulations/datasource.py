"""Datasets named by URI: the data reaches a cluster job without copying files by hand.

A scenario may name a CSV file by URI -- ``file://``, ``s3://``, ``gs://``, ``hdfs://``
(anything ``pyarrow.fs`` opens) -- as its dataset::

    [data]
    dataset = "s3://my-bucket/datasets/pima.csv?label=outcome"

(``label=`` names the label column; without it the last column is the label), or point
the data directory (``[data].data_dir`` or ``PPKNN_DATA_DIR``) at a URI holding
``manifest.json`` and the CSV files, and name the dataset as usual (``"pima"``). The
driver -- on a cluster, the job's entrypoint on the head node -- fetches the file into
the user cache (``PPKNN_CACHE_DIR``, else ``~/.cache/ppknn/remote``), loads and splits it,
and ships each party its rows through the object store; no node needs the file.

>>> resolve_dataset("pima", None)
('pima', None)
>>> is_uri("s3://bucket/x.csv"), is_uri("sklearn:iris"), is_uri("/data/x.csv")
(True, False, False)
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ppknn.core.errors import DataError

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_uri(text: str | None) -> bool:
    """Whether ``text`` is a URI (``scheme://...``) rather than a name or a local path."""
    return bool(text) and bool(_URI.match(str(text)))


def cache_dir() -> Path:
    """Where fetched files go: ``PPKNN_CACHE_DIR``, else ``~/.cache/ppknn/remote``."""
    env = os.environ.get("PPKNN_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "ppknn" / "remote"


def _split_label(uri: str) -> tuple[str, str | None]:
    """The URI without its ``label=`` query parameter, and that parameter."""
    parts = urlsplit(uri)
    query = parse_qsl(parts.query, keep_blank_values=True)
    label = next((v for k, v in query if k == "label"), None)
    rest = urlencode([(k, v) for k, v in query if k != "label"])
    return urlunsplit((parts.scheme, parts.netloc, parts.path, rest, parts.fragment)), label


def fetch(uri: str, target: Path) -> Path:
    """Copy the file at ``uri`` to ``target`` (atomically); ``DataError`` naming the URI."""
    import pyarrow.fs as pafs

    try:
        fs, path = pafs.FileSystem.from_uri(uri)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.part")
        with fs.open_input_stream(path) as src, open(tmp, "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.replace(tmp, target)
    except (OSError, ValueError) as exc:
        raise DataError(f"cannot read {uri!r}: {exc}") from None
    return target


def _folder_for(uri: str) -> Path:
    return cache_dir() / hashlib.sha256(uri.encode()).hexdigest()[:16]


def _csv_header(path: Path) -> list[str]:
    with path.open(newline="") as fh:
        return [c.strip() for c in fh.readline().strip().split(",")]


def resolve_dataset(dataset: str, data_dir: str | None) -> tuple[str, str | None]:
    """``(name, local data directory)`` for :func:`ppknn.core.data.load_dataset`.

    A dataset or a data directory given by URI is fetched into the cache first
    (module docstring), once per process while the cached copy exists (a grid of
    runs fetches it once); anything else is returned unchanged.
    """
    key = (dataset, data_dir, os.environ.get("PPKNN_DATA_DIR"), str(cache_dir()))
    name, folder = _resolve(*key)
    if folder is not None and folder != data_dir and not Path(folder).is_dir():
        _resolve.cache_clear()  # the cached copy was removed: fetch again
        name, folder = _resolve(*key)
    return name, folder


@functools.lru_cache(maxsize=16)
def _resolve(dataset: str, data_dir: str | None, env_dir: str | None, cache: str
             ) -> tuple[str, str | None]:
    if is_uri(dataset):
        uri, label = _split_label(dataset)
        stem = Path(urlsplit(uri).path).stem or "dataset"
        folder = _folder_for(uri)
        local = fetch(uri, folder / f"{stem}.csv")
        header = _csv_header(local)
        label = label or header[-1]
        if label not in header:
            raise DataError(f"dataset {dataset!r}: label column {label!r} not in the file's "
                            f"columns {header}")
        from ppknn.simulations.reporting import jsonio

        (folder / "manifest.json").write_text(jsonio.dumps(
            {stem: {"file": f"{stem}.csv", "label": label, "source": uri}}))
        return stem, str(folder)
    directory = data_dir or env_dir
    if is_uri(directory):
        assert directory is not None
        base = directory.rstrip("/")
        folder = _folder_for(base)
        manifest = json.loads(fetch(f"{base}/manifest.json",
                                    folder / "manifest.json").read_text())
        entry = manifest.get(dataset)
        if entry is not None:
            fetch(f"{base}/{entry['file']}", folder / entry["file"])
        return dataset, str(folder)
    return dataset, data_dir


__all__ = ["cache_dir", "fetch", "is_uri", "resolve_dataset"]
