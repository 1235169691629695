"""Sphinx cross-reference roles in the docstrings become links in the API reference.

The docstrings name other objects with Sphinx roles (``:class:`~core.errors.ConfigError```,
``:func:`run```, ``:meth:`Utility.cmp() <protocols.dptt.utility.Utility.cmp>```, ...), which
Markdown would print as literal text. Two stages turn them into links:

1. :class:`SphinxRoles`, a griffe extension, reads every docstring of the loaded package
   and replaces each role with a marker that holds the names the target may go by: the
   role's target resolved from the documented object's scope (its members, imports and
   parents, as Python would), or read as a full path (``core.errors.X`` is also tried as
   ``ppknn.core.errors.X``, the installed shape), with the alias and canonical paths of the
   object found. A target that names nothing in the package (``numpy.random.Generator``,
   ``os.urandom``) keeps an empty list.
2. :func:`on_env`, an mkdocs hook that runs after every page is rendered and before
   mkdocs-autorefs fixes references, replaces each marker with an autorefs reference when
   one of its names is rendered somewhere in the site, and with plain code formatting
   otherwise (an object that is private or outside the reference). It logs how many roles
   became links and how many stayed code, and why.

Nothing in the docstrings is rewritten on disk; the conversion happens on griffe's copy.
"""

from __future__ import annotations

import html
import logging
import re
from collections import Counter
from pathlib import Path
from typing import Any

from griffe import AliasResolutionError, Extension, NameResolutionError, Object
from mkdocs.plugins import event_priority

_log = logging.getLogger("mkdocs.hooks.roles")

#: The Sphinx Python-domain roles converted (``:py:class:`` as well as ``:class:``).
ROLES = ("class", "func", "meth", "mod", "attr", "data", "exc", "obj", "const")
ROLE_RE = re.compile(r":(?:py:)?(?P<role>" + "|".join(ROLES) + r"):`(?P<body>[^`]+)`")
#: The marker a converted role leaves in the rendered HTML until :func:`on_env` runs.
MARKER_RE = re.compile(r'<span data-ppknn-role="(?P<names>[^"]*)">(?P<title>.*?)</span>')
#: The package the reference documents; ``core.x`` in a docstring is ``ppknn.core.x``.
PACKAGE = "ppknn"

# How the roles of the last build ended: "linked", "not rendered", "unresolved".
OUTCOMES: Counter[str] = Counter()
# The roles of the last build shown as code: (outcome, title, names tried).
AS_CODE: list[tuple[str, str, str]] = []


def split_role(body: str) -> tuple[str, str]:
    """The displayed text and the target of a role's body.

    Parameters
    ----------
    body : str
        What stands between the backquotes: ``name``, ``~a.b.name`` (shown as ``name``)
        or ``title <target>``.

    Returns
    -------
    tuple of str
        ``(title, target)``; the target has no ``~``, leading ``.`` nor trailing ``()``.
    """
    body = body.strip()
    explicit = re.fullmatch(r"(?P<title>.*?)\s*<(?P<target>[^<>]+)>", body, flags=re.S)
    if explicit and explicit["title"]:
        title, target = explicit["title"], explicit["target"].strip()
    else:
        target = body
        title = target.lstrip("~")
        if target.startswith("~"):
            title = title.rsplit(".", 1)[-1]
    target = target.lstrip("~").lstrip(".").removesuffix("()")
    return title, target


def _paths_of(found: Object, path: str) -> list[str]:
    """The path a target was found under, then its canonical path when they differ."""
    names = [path]
    try:
        canonical = found.canonical_path
    except AliasResolutionError:
        return names
    if canonical not in names:
        names.append(canonical)
    return names


def candidates(obj: Object, target: str) -> list[str]:
    """The full paths a role's target may be rendered under, the likeliest first.

    Parameters
    ----------
    obj : griffe.Object
        The object whose docstring holds the role; short names resolve in its scope.
    target : str
        The role's target, e.g. ``ConfigError``, ``PrivacyLedger.reserve`` or
        ``core.errors.ConfigError``.

    Returns
    -------
    list of str
        Paths of objects that exist in the loaded package; empty when the target names
        nothing there (an outside library, a typo, a local name).
    """
    collection = obj.modules_collection
    head, _, rest = target.partition(".")
    tries: list[str] = []
    try:
        base = obj.resolve(head)
    except (NameResolutionError, AliasResolutionError):
        pass
    else:
        tries.append(f"{base}.{rest}" if rest else base)
    tries += [target, f"{PACKAGE}.{target}"]
    names: list[str] = []
    for path in tries:
        try:
            found = collection[path]
        except (KeyError, AliasResolutionError, ValueError):
            continue
        names += [name for name in _paths_of(found, path) if name not in names]
    return names


def convert(obj: Object, text: str) -> tuple[str, int]:
    """Replace the Sphinx roles in one docstring with markers :func:`on_env` resolves.

    Parameters
    ----------
    obj : griffe.Object
        The documented object (the scope names resolve in).
    text : str
        The docstring.

    Returns
    -------
    tuple
        The new docstring and the number of roles replaced.
    """

    def marker(match: re.Match[str]) -> str:
        title, target = split_role(match["body"])
        names = " ".join(candidates(obj, target))
        return f'<span data-ppknn-role="{html.escape(names)}">`{title}`</span>'

    return ROLE_RE.subn(marker, text)


class SphinxRoles(Extension):
    """Griffe extension: every Sphinx role in the package's docstrings becomes a marker."""

    def on_package(self, *, pkg: Object, **kwargs: Any) -> None:
        """Convert the roles of every object of a fully loaded package.

        Parameters
        ----------
        pkg : griffe.Module
            The package just loaded (its object tree is complete, names resolve).
        **kwargs : Any
            Other event arguments (unused).
        """
        stack: list[Object] = [pkg]
        while stack:
            obj = stack.pop()
            if obj.docstring is not None and ":`" in obj.docstring.value:
                obj.docstring.value, _ = convert(obj, obj.docstring.value)
                obj.docstring.__dict__.pop("parsed", None)  # parse the new text
            stack.extend(member for member in obj.members.values() if not member.is_alias)


def _link(match: re.Match[str], url_of: Any) -> str:
    names, title = html.unescape(match["names"]).split(), match["title"]
    if not names:
        OUTCOMES["unresolved"] += 1
        AS_CODE.append(("unresolved", title, ""))
        return title
    for name in names:
        try:
            url_of(name)
        except KeyError:
            continue
        OUTCOMES["linked"] += 1
        return f'<autoref identifier="{html.escape(name)}">{title}</autoref>'
    OUTCOMES["not rendered"] += 1
    AS_CODE.append(("not rendered", title, " ".join(names)))
    return title


@event_priority(0)  # after mkdocstrings' on_env, before mkdocs-autorefs' (priority -50)
def on_env(env: Any, config: Any, files: Any) -> Any:
    """Turn each role marker into an autorefs reference or into plain code.

    Parameters
    ----------
    env : jinja2.Environment
        The theme's environment (returned unchanged).
    config : mkdocs.config.defaults.MkDocsConfig
        The site's configuration (holds the autorefs plugin).
    files : mkdocs.structure.files.Files
        The site's files; the rendered pages' HTML is edited in place.

    Returns
    -------
    jinja2.Environment
        ``env``.
    """
    autorefs = config.plugins["autorefs"]
    # the handler's aliases (an object rendered under another path); gone in autorefs 2
    fallback = getattr(autorefs, "get_fallback_anchor", None)
    extra = {"fallback": fallback} if fallback is not None else {}

    def url_of(name: str) -> Any:
        return autorefs.get_item_url(name, **extra)

    OUTCOMES.clear()
    AS_CODE.clear()
    for file in files:
        if file.page is not None and file.page.content:
            file.page.content = MARKER_RE.sub(lambda m: _link(m, url_of), file.page.content)
    _log.info("Sphinx roles in the reference: %d linked, %d shown as code (%d name an object "
              "not rendered in the reference, %d name nothing in the package)",
              OUTCOMES["linked"], OUTCOMES["not rendered"] + OUTCOMES["unresolved"],
              OUTCOMES["not rendered"], OUTCOMES["unresolved"])
    for outcome, title, names in AS_CODE:
        _log.debug("role shown as code (%s): %s %s", outcome, title, names)
    return env


@event_priority(90)  # after hooks.py has pointed the handler at the sources
def on_config(config: Any) -> Any:
    """Register :class:`SphinxRoles` with the Python handler (by this file's path)."""
    options = config.plugins["mkdocstrings"].config.handlers.setdefault("python", {})
    extensions = options.setdefault("options", {}).setdefault("extensions", [])
    extensions.append(f"{Path(__file__).resolve()}:SphinxRoles")
    return config
