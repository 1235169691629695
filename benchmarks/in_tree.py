"""Run a benchmark script of another tree (e.g. a git worktree) with ppknn imported from it.

Run:  git worktree add /tmp/ppknn-old <commit>
      python benchmarks/in_tree.py /tmp/ppknn-old benchmarks/bench_dp_owner_scaling.py [ARGS]

For A/B runs beside this checkout's own benchmark, alternated by the caller: the other
tree's script runs with the installed (editable) package's folders mapped to that tree,
so its code, not this checkout's, is measured. The other tree's C extensions are used
only if they were built in it; otherwise its numpy / Python paths run.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def use_tree(tree: str) -> None:
    """Import ``ppknn`` from ``tree`` (an editable install maps the package to folders)."""
    import __editable___ppknn_0_1_0_finder as finder  # the installed package's finder

    for name, path in list(finder.MAPPING.items()):
        finder.MAPPING[name] = path.replace(str(ROOT), tree)
    sys.path.insert(0, tree)


def main() -> None:
    if len(sys.argv) < 3:
        print("usage: python benchmarks/in_tree.py TREE SCRIPT [ARGS...]", file=sys.stderr)
        sys.exit(2)
    tree, script = str(Path(sys.argv[1]).resolve()), sys.argv[2]
    if not (Path(tree) / script).is_file():
        print(f"in_tree: no {script!r} in {tree!r}; allowed: a script file inside the tree",
              file=sys.stderr)
        sys.exit(2)
    if tree != str(ROOT):
        use_tree(tree)
    sys.argv = [str(Path(tree) / script), *sys.argv[3:]]
    runpy.run_path(sys.argv[0], run_name="__main__")


if __name__ == "__main__":
    main()
