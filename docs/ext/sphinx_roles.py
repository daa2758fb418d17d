"""A Griffe extension for the API reference: pycurator's docstrings are written for Sphinx,
with its roles (``:class:`LeaderLatch```, ``:meth:`~LeaderLatch.wait```), literal blocks (a
paragraph ending in ``::``) and ``#:`` comments documenting an attribute; the reference renders
docstrings as Markdown.

Each role becomes a link to the name's entry in the reference where the name is documented
there (a public name of ``pycurator``, ``pycurator.aio`` or ``pycurator.testing``, or one of
its members), and plain code otherwise. Each literal block becomes a fenced block, Python if it
parses as Python. A ``#:`` comment above an attribute without a docstring becomes its docstring.
"""

from __future__ import annotations

import ast
import functools
import re
import textwrap
from collections.abc import Iterator
from typing import Any

import griffe

#: The modules the reference documents, in the order a name is looked up in them.
DOCUMENTED = ("pycurator", "pycurator.aio", "pycurator.testing")

ROLE = re.compile(
    r":(?:py:)?(?:class|meth|func|data|attr|exc|mod|obj):`(?P<tilde>~?)(?P<text>[^`<]+?)"
    r"(?:\s*<(?P<target>[^>`]+)>)?`"
)


class SphinxRoles(griffe.Extension):
    """Rewrites the docstrings of a loaded ``pycurator`` package (see the module docstring)."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        if pkg.path != "pycurator":
            return
        public = _public_paths(pkg)
        for obj in _objects(pkg):
            if obj.docstring is None and isinstance(obj, griffe.Attribute):
                _comment_docstring(obj)
            if obj.docstring is not None:
                link = functools.partial(_link, obj, public=public)
                obj.docstring.value = ROLE.sub(link, _literal_blocks(obj.docstring.value))


def _objects(obj: griffe.Object) -> Iterator[griffe.Object]:
    """``obj`` and every object defined in it, aliases (imported names) left out."""
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            assert isinstance(member, griffe.Object)
            yield from _objects(member)


def _comment_docstring(attribute: griffe.Attribute) -> None:
    """Give ``attribute`` the ``#:`` comment lines right above its assignment as docstring."""
    lines = attribute.module.lines
    first = (attribute.lineno or 1) - 1
    start = first
    while start > 0 and lines[start - 1].strip().startswith("#:"):
        start -= 1
    if start < first:
        text = "\n".join(line.strip()[2:].strip() for line in lines[start:first])
        attribute.docstring = griffe.Docstring(text, parent=attribute)


def _public_paths(pkg: griffe.Module) -> dict[str, str]:
    """Where each object documented in the reference is defined -> the path it is shown at."""
    public: dict[str, str] = {}
    for module_path in DOCUMENTED:
        module = pkg if module_path == pkg.path else pkg[module_path.removeprefix("pycurator.")]
        public.setdefault(module.path, module.path)
        for name in module.exports or ():
            member = module.members.get(str(name))
            if member is None:
                continue
            target = member.final_target if isinstance(member, griffe.Alias) else member
            public.setdefault(target.path, f"{module.path}.{name}")
    return public


def _resolve(obj: griffe.Object, name: str) -> str | None:
    """The path ``name`` refers to in the docstring of ``obj``, or None."""
    if name.startswith("pycurator"):
        return name
    head, _, rest = name.partition(".")
    try:
        resolved = obj.resolve(head)
    except griffe.NameResolutionError:
        return None
    return f"{resolved}.{rest}" if rest else resolved


def _shown_at(path: str, public: dict[str, str]) -> str | None:
    """The path in the reference of the object defined at ``path``: a public name, or a public
    member of one; None for anything the reference does not show."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        shown = public.get(".".join(parts[:cut]))
        if shown is not None:
            rest = parts[cut:]
            if shown in DOCUMENTED and rest:  # a module shows its exported names alone
                return None
            if any(part.startswith("_") for part in rest):
                return None
            return ".".join([shown, *rest])
    return None


def _link(obj: griffe.Object, match: re.Match[str], *, public: dict[str, str]) -> str:
    text, target = match["text"].strip(), (match["target"] or match["text"]).strip()
    target = target.lstrip("~")
    if match["tilde"]:
        text = text.rsplit(".", 1)[-1]
    resolved = _resolve(obj, target)
    shown = _shown_at(resolved, public) if resolved else None
    return f"[`{text}`][{shown}]" if shown else f"`{text}`"


def _literal_blocks(text: str) -> str:
    """reST literal blocks (a paragraph ending in ``::``, a blank line, then indented lines) as
    fenced Markdown blocks."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.rstrip().endswith("::") and i + 2 < len(lines) and not lines[i + 1].strip():
            end = i + 2
            while end < len(lines) and (not lines[end].strip() or lines[end][0] in " \t"):
                end += 1
            block = "\n".join(lines[i + 2 : end])
            if block.strip():
                lead = line.rstrip()[:-2].rstrip()
                out += [f"{lead}:", ""] if lead else []
                out += ["```" + _language(block), textwrap.dedent(block).strip("\n"), "```", ""]
                i = end
                continue
        out.append(line)
        i += 1
    return "\n".join(out)


def _language(block: str) -> str:
    try:
        ast.parse(textwrap.dedent(block))
    except SyntaxError:
        return "text"
    return "python"
