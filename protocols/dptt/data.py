"""The thesis's data: synthetic points (§6.1) and quantised check-ins (Gowalla, Brightkite).

Synthetic. The thesis draws "100,000 and 1,000,000 values sampled from a 0
to 1 billion normal distribution" (pairs in 2-D). We read this as a normal
distribution *spanning* [0, 10^9]: mean 5·10^8, standard deviation 10^9/6
(so ±3σ covers the range), truncated to [0, 10^9] by redrawing the few
values outside; coordinates are independent. The global sensitivity is then
the range, 10^9, as §6.1 says. ``distribution="uniform"`` draws U(0, 10^9)
instead, the other possible reading. Queries come from the same distribution.

Check-ins. SNAP's ``loc-gowalla_totalCheckins.txt`` and
``loc-brightkite_totalCheckins.txt`` (Cho, Myers & Leskovec 2011) have one
check-in per line: ``user<TAB>time<TAB>latitude<TAB>longitude<TAB>location id``
(optionally gzip-compressed). The thesis keeps a region (San Francisco or
Austin), quantises it "into 500 x 200 cells" and uses the centres of the
cells as the dataset. We read 500 as the latitude cells and 200 as the
longitude cells (this makes San Francisco's cells about 56 m x 60 m, nearly
square) and keep the centres of the *non-empty* cells, in degrees
(latitude, longitude). The files are not available offline; the loader is
tested on a small file in that format.

Examples
--------
>>> import numpy as np
>>> x = synthetic_points(1000, 2, np.random.default_rng(0))
>>> x.shape, bool(x.min() >= 0 and x.max() <= SPAN)
((1000, 2), True)
>>> quantise(np.array([[37.54, -122.51], [37.79, -122.38], [37.54, -122.51]]), SAN_FRANCISCO,
...          cells=(2, 2)).round(3).tolist()
[[37.602, -122.481], [37.728, -122.413]]
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from ppknn.core.errors import ConfigError, DataError

SPAN = 1e9
"""The synthetic domain [0, SPAN] (§6.1: "0 to 1 billion")."""
DISTRIBUTIONS = ("normal", "uniform")


def synthetic_points(n: int, dims: int, rng: np.random.Generator, *,
                     distribution: str = "normal", span: float = SPAN) -> np.ndarray:
    """``(n, dims)`` points on [0, span] (see the module docstring for the reading)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(f"n must be an integer >= 1, got {n!r}")
    if isinstance(dims, bool) or not isinstance(dims, int) or dims < 1:
        raise ConfigError(f"dims must be an integer >= 1, got {dims!r}")
    if distribution == "uniform":
        return rng.uniform(0.0, span, size=(n, dims))
    if distribution != "normal":
        raise ConfigError(f"distribution must be one of {DISTRIBUTIONS}, got {distribution!r}")
    x = rng.normal(span / 2, span / 6, size=(n, dims))
    bad = (x < 0) | (x > span)
    while bad.any():  # truncation by redrawing: about 0.27% of values, a few passes
        x[bad] = rng.normal(span / 2, span / 6, size=int(bad.sum()))
        bad = (x < 0) | (x > span)
    return x


@dataclass(frozen=True, kw_only=True)
class Region:
    """A latitude/longitude box (degrees)."""

    name: str
    lat: tuple[float, float]
    lon: tuple[float, float]

    def __post_init__(self) -> None:  # the thesis gives Austin's longitudes high-to-low
        object.__setattr__(self, "lat", (min(self.lat), max(self.lat)))
        object.__setattr__(self, "lon", (min(self.lon), max(self.lon)))
        if self.lat[0] == self.lat[1] or self.lon[0] == self.lon[1]:
            raise ConfigError(f"region {self.name!r} has zero extent: {self.lat}, {self.lon}")


SAN_FRANCISCO = Region(name="San Francisco", lat=(37.5395, 37.7910), lon=(-122.5153, -122.3789))
AUSTIN = Region(name="Austin", lat=(29.833, 30.838), lon=(-96.700, -98.592))
REGIONS = {"sf": SAN_FRANCISCO, "austin": AUSTIN}
GRID = (500, 200)
"""Cells (latitude, longitude) of the thesis's quantisation."""


def load_checkins(path: str | os.PathLike[str]) -> np.ndarray:
    """Latitudes and longitudes ``(M, 2)`` from a SNAP check-in file (``.txt`` or ``.txt.gz``).

    Lines that do not have five tab-separated fields with numeric
    coordinates in range are skipped (the SNAP files contain a few).
    """
    import pyarrow as pa
    import pyarrow.csv as pacsv

    if not os.path.isfile(path):
        raise DataError(f"no check-in file at {str(path)!r} (SNAP loc-*_totalCheckins.txt)")
    names = ["user", "time", "lat", "lon", "location"]
    try:
        table = pacsv.read_csv(
            path,
            read_options=pacsv.ReadOptions(column_names=names),
            parse_options=pacsv.ParseOptions(delimiter="\t", invalid_row_handler=lambda _: "skip"),
            convert_options=pacsv.ConvertOptions(
                column_types={"lat": pa.string(), "lon": pa.string()},
                include_columns=["lat", "lon"]),
        )
    except (pa.ArrowInvalid, OSError) as exc:
        raise DataError(f"cannot read check-ins from {str(path)!r}: {exc}") from exc
    lat, lon = _numbers(table["lat"]), _numbers(table["lon"])
    ok = np.isfinite(lat) & np.isfinite(lon) & (np.abs(lat) <= 90) & (np.abs(lon) <= 180)
    return np.stack([lat[ok], lon[ok]], axis=1)


_NUMBER = r"^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$"


def _numbers(column: object) -> np.ndarray:
    """Parse a string column to floats, NaN where a value is not a number (vectorised)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    col = pc.fill_null(column, "")
    valid = pc.match_substring_regex(col, _NUMBER)
    cleaned = pc.if_else(valid, pc.utf8_trim_whitespace(col), pa.scalar("nan"))
    return np.asarray(pc.cast(cleaned, pa.float64()).to_numpy(zero_copy_only=False))


def quantise(checkins: np.ndarray, region: Region, *, cells: tuple[int, int] = GRID
             ) -> np.ndarray:
    """Centres ``(P, 2)`` (lat, lon) of the grid cells of ``region`` holding a check-in.

    Cells are half-open except the last row and column, which include the
    region's upper edges. Centres are sorted by (latitude cell, longitude cell).
    """
    n_lat, n_lon = cells
    if n_lat < 1 or n_lon < 1:
        raise ConfigError(f"cells must be two integers >= 1, got {cells!r}")
    pts = np.asarray(checkins, dtype=np.float64).reshape(-1, 2)
    (la0, la1), (lo0, lo1) = region.lat, region.lon
    inside = (pts[:, 0] >= la0) & (pts[:, 0] <= la1) & (pts[:, 1] >= lo0) & (pts[:, 1] <= lo1)
    pts = pts[inside]
    if len(pts) == 0:
        raise DataError(f"no check-in lies in {region.name} ({region.lat}, {region.lon})")
    i = np.minimum(((pts[:, 0] - la0) / (la1 - la0) * n_lat).astype(np.int64), n_lat - 1)
    j = np.minimum(((pts[:, 1] - lo0) / (lo1 - lo0) * n_lon).astype(np.int64), n_lon - 1)
    cell = np.unique(i * n_lon + j)
    ci, cj = cell // n_lon, cell % n_lon
    return np.stack([la0 + (ci + 0.5) * (la1 - la0) / n_lat,
                     lo0 + (cj + 0.5) * (lo1 - lo0) / n_lon], axis=1)


__all__ = [
    "AUSTIN",
    "DISTRIBUTIONS",
    "GRID",
    "REGIONS",
    "SAN_FRANCISCO",
    "SPAN",
    "Region",
    "load_checkins",
    "quantise",
    "synthetic_points",
]
