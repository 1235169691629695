"""Builders shared by tests (not fixtures, so tests can parametrise them)."""

from __future__ import annotations

import numpy as np

from ppknn.core.data import DomainBounds, load_dataset, partition, train_test_split
from ppknn.core.runtime import PartySpec, RunContext, make_runtime
from ppknn.protocols.ppknn_ring import PPKNNConfig, random_ring, run_ppknn
from ppknn.protocols.ppknn_ring.parties.ring_owner import RingDataOwner
from ppknn.protocols.ppknn_ring.pp_topk import TopKParams


def owner_specs(parts_X, parts_y, n_classes, run_id="test", seed=0):
    names = [f"owner-{i:02d}" for i in range(len(parts_X))]
    return names, [
        PartySpec(name, RingDataOwner, {"party_id": name, "index": i, "X": X, "y": y,
                                        "n_classes": n_classes, "run_id": run_id, "seed": seed})
        for i, (name, X, y) in enumerate(zip(names, parts_X, parts_y))
    ]


def split_dataset(name, n, seed=0, test_fraction=1 / 3):
    ds = load_dataset(name)
    rng = np.random.default_rng(seed)
    train, test = train_test_split(len(ds.y), test_fraction, rng)
    parts = partition(ds.y[train], n, rng=rng)
    Xtr, ytr = ds.X[train], ds.y[train]
    return ds, [Xtr[p] for p in parts], [ytr[p] for p in parts], ds.X[test], ds.y[test]


def run_on(kind, parts_X, parts_y, n_classes, queries, *, k=5, p0=1.0, d=0.5, rounds=2,
           weighting="uniform", secure_sum="ring", seed=0, channels=False,
           transcript_dir=None, max_distance=None, runtime=None):
    """Run PP-kNN on a fresh runtime; returns (result, runtime) with the runtime closed."""
    names, specs = owner_specs(parts_X, parts_y, n_classes, seed=seed)
    rt = runtime or make_runtime(kind)
    rt.start(specs, RunContext(run_id="test", transcript_dir=transcript_dir,
                               secure_channels=channels, party_timeout_s=30))
    if max_distance is None:
        allx = np.concatenate(list(parts_X) + [queries])
        max_distance = DomainBounds.from_data(allx, warn=False).diameter
    ring, start = random_ring(names, np.random.default_rng(seed))
    cfg = PPKNNConfig(params=TopKParams(k=k, p0=p0, d=d, rounds=rounds,
                                        max_distance=max_distance),
                      weighting=weighting, secure_sum=secure_sum)
    try:
        result = run_ppknn(rt, queries, cfg, ring=ring, start=start)
        totals = rt.close_transcript()
    finally:
        rt.shutdown()
    return result, totals


SVG = "{http://www.w3.org/2000/svg}"


def figure_texts(path) -> str:
    """The words of an SVG figure ppknn drew, after checking it is one.

    It parses as XML with an ``<svg>`` root, has a width and height, and draws more
    than ten marks (rectangles, circles, lines, polylines, polygons). Returns every
    ``<text>``'s content, one per line.
    """
    import xml.etree.ElementTree as ET

    root = ET.parse(path).getroot()
    assert root.tag == SVG + "svg", root.tag
    assert float(root.get("width", "0pt")[:-2]) > 0 and float(root.get("height", "0pt")[:-2]) > 0
    marks = {SVG + t for t in ("rect", "circle", "line", "polyline", "polygon")}
    assert sum(e.tag in marks for e in root.iter()) > 10, f"{path}: too few marks"
    return "\n".join("".join(t.itertext()) for t in root.iter(SVG + "text"))
