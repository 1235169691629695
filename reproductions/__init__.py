"""ppknn's paper reproductions: ``ppknn reproduce NAME``.

This package sits beside the library and is built on its public modules
(:mod:`ppknn.core`, :mod:`ppknn.protocols`, :mod:`ppknn.parties` and
:mod:`ppknn.simulations`); the library never imports it. Each reproduction
is registered under the entry point group ``ppknn.reproductions`` (see
``pyproject.toml``), which is how ``ppknn reproduce`` finds, lists and runs
it (:mod:`ppknn.simulations.reproduce`).

Modules
-------
xiong, xiong_report
    Xiong, Chitti & Liu: PP-kNN over a ring.
gursoy
    Gursoy, Inan, Nergiz & Saygin: DP r-N and k-NN classification.
lepert, lepert_claims
    Lepert: DP-TT private kd-tree traversal against geo-indistinguishability.
mukherjee, mukherjee_claims
    Mukherjee, Banerjee, Chen & Gangopadhyay: PCA + Laplace perturbation.
zafarani
    Zafarani & Clifton: DP Naive Bayes with smooth sensitivity.
experiments
    The experiment code behind the reproductions (one module per protocol).

A reproduction module defines ``DESCRIPTION`` (one line) and

``run(output: Path, *, quick: bool, runtime: str, report: Path, ...) -> Path``
    Re-run the paper's experiments, write one CSV table and one PNG plot per
    figure into ``output``, write the Markdown report ``report`` (figures and
    claims beside measured numbers, every number generated) and return its
    path. ``quick`` shrinks repetitions and sizes so the whole run takes under
    two minutes; ``runtime`` is ``"inprocess"`` or ``"ray"``. Further keyword
    arguments are the reproduction's settings (``ppknn reproduce NAME --set
    KEY=VALUE``); a ``log`` argument, when present, receives progress lines.
"""
