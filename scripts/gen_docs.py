"""The documentation site's generated parts: an MkDocs hook (``hooks:`` in mkdocs.yml) and a script.

Pages hold a marker this replaces when the site is built, so what the code defines is read from the code
and cannot drift from it:

- ``<!-- generated: task-spec -->`` (docs/reference/task-spec.md): one table per section of ``task.yaml``,
  from ``TaskSpec``'s JSON schema (what ``gradeflow schema`` prints: types, defaults, bounds), each key's
  meaning from its field docstring (read by griffe, as the Python API reference is).
- ``<!-- generated: cli -->`` (docs/reference/cli.md): every ``gradeflow`` command with its usage and
  arguments, from the argument parser the CLI runs (``gradeflow.cli.main._parser``).
- docs/reference/reason-codes.md: under each ``### `code` `` heading, the registry's one-line meaning
  (``gradeflow.models.reasons``). A registered code the page has no entry for, or an entry for a code nobody
  registered, stops the build.

The Python API reference (mkdocstrings) reads the docstrings through :class:`RstRoles`, a griffe extension
that shows their reStructuredText roles (``:class:`~gradeflow.models.GradeResult` ``) as Markdown code.

``python scripts/gen_docs.py task-spec`` (or ``cli``, ``reason-codes``) prints the generated Markdown.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import griffe

ROOT = Path(__file__).resolve().parent.parent
MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.M)
REASON_HEADING = re.compile(r"^### `([a-z0-9-]+)`$", re.M)
REASON_PAGE = "reference/reason-codes.md"
ROLE = re.compile(r":[a-z]+:`(~?)([^`]+)`")
LITERAL_MARK = re.compile(r"^::\n", re.M)


class RstRoles(griffe.Extension):
    """Docstrings' reStructuredText as Markdown: ``:func:`~a.b` `` reads `` `b` ``; a ``::`` line goes (the
    indented block after it is code in Markdown too)."""

    def on_object(self, *, obj: griffe.Object, **_: Any) -> None:
        if obj.docstring is not None:
            text = ROLE.sub(
                lambda found: f"`{found.group(2).rsplit('.', 1)[-1] if found.group(1) else found.group(2)}`",
                obj.docstring.value,
            )
            obj.docstring.value = LITERAL_MARK.sub("", text)
            obj.docstring.__dict__.pop("parsed", None)  # parsed before the tree was complete: parse the new text


class GenerationError(Exception):
    """A page and the code disagree (a reason code without an entry, an unknown marker)."""


def _cell(text: str) -> str:
    """Text for one table cell: one line, reStructuredText's double backticks as Markdown's, pipes escaped."""
    return " ".join(text.replace("``", "`").split()).replace("|", "\\|")


def _plain(text: str) -> str:
    """Text shown as it is written: Markdown's emphasis marks escaped (``__eq__`` is no bold), one line."""
    return re.sub(r"([_*`\\])", r"\\\1", " ".join(text.split()))


def _field_docstrings() -> dict[str, dict[str, str]]:
    """Each spec model's field docstrings, by class name and field name (static: griffe reads the source)."""
    module = griffe.load("gradeflow.models.spec", search_paths=[str(ROOT / "src")])
    found: dict[str, dict[str, str]] = {}
    for name, member in module.members.items():
        if isinstance(member, griffe.Class):
            found[name] = {
                field: attribute.docstring.value for field, attribute in member.members.items() if attribute.docstring
            }
    return found


def _type(schema: dict[str, Any]) -> str:
    """A schema's type as a reader writes it in YAML."""
    if "$ref" in schema:
        return "a section (below)"
    if "enum" in schema:
        return " or ".join(f"`{json.dumps(value)}`" for value in schema["enum"])
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    if "anyOf" in schema:
        return " or ".join(_type(option) for option in schema["anyOf"])
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list of {_type(schema.get('items', {}))}"
    if kind == "object" and "additionalProperties" in schema:
        return f"map of string to {_type(schema['additionalProperties'])}"
    return {"string": "string", "integer": "integer", "number": "number", "boolean": "boolean", "null": "null"}.get(
        kind, str(kind)
    )


def _bounds(schema: dict[str, Any]) -> list[str]:
    """The schema's bounds on a value (pattern, minimum, maximum), also inside ``anyOf`` and list items."""
    words = {"minimum": "≥", "exclusiveMinimum": ">", "maximum": "≤", "exclusiveMaximum": "<"}
    found = [f"{sign} {schema[key]}" for key, sign in words.items() if key in schema]
    if "pattern" in schema:
        found.append(f"matches `{schema['pattern']}`")
    for option in schema.get("anyOf", []):
        found += _bounds(option)
    if isinstance(schema.get("items"), dict):
        found += [f"each {bound}" for bound in _bounds(schema["items"])]
    if isinstance(schema.get("additionalProperties"), dict):
        found += [f"each value {bound}" for bound in _bounds(schema["additionalProperties"])]
    return found


def _default(model: type[Any], field: str, schema: dict[str, Any], required: bool) -> str:
    if required:
        return "required"
    if "default" in schema:
        return f"default `{json.dumps(schema['default'])}`"
    value = model.model_fields[field].get_default(call_default_factory=True)
    if hasattr(value, "model_dump"):
        return "default: its section's defaults"
    return f"default `{json.dumps(value)}`"


def _section(title: str, schema: dict[str, Any], model: type[Any], docs: dict[str, str]) -> list[str]:
    lines = [f"### {title}", "", _cell(schema.get("description", "")), ""]
    lines += ["| key | type | meaning |", "|---|---|---|"]
    required = set(schema.get("required", []))
    for field, prop in schema.get("properties", {}).items():
        kind = f"{_type(prop)}, {_default(model, field, prop, field in required)}"
        bounds = _bounds(prop)
        meaning = _cell(docs.get(field, "")) + (f" Bounds: {_cell(', '.join(bounds))}." if bounds else "")
        lines.append(f"| `{field}` | {kind} | {meaning.strip()} |")
    return [*lines, ""]


def _sections(schema: dict[str, Any]) -> dict[str, str]:
    """Each section model's key path in ``task.yaml`` (``tests``, ``graders[]``), in the order keys appear."""
    paths: dict[str, str] = {}

    def walk(properties: dict[str, Any], prefix: str) -> None:
        for field, prop in properties.items():
            for option in [prop, *prop.get("anyOf", [])]:
                listed = option.get("type") == "array"
                ref = (option.get("items", {}) if listed else option).get("$ref")
                name = ref.rsplit("/", 1)[1] if ref else None
                if name and name not in paths:
                    paths[name] = f"{prefix}{field}{'[]' if listed else ''}"
                    walk(schema["$defs"][name].get("properties", {}), paths[name] + ".")

    walk(schema.get("properties", {}), "")
    return paths


def task_spec_markdown() -> str:
    """The task spec's reference: the top level, then each section by its key, from the JSON schema."""
    from gradeflow.models import spec

    schema = spec.TaskSpec.model_json_schema()
    docs = _field_docstrings()
    lines = _section("The top level (TaskSpec)", schema, spec.TaskSpec, docs["TaskSpec"])
    for name, path in _sections(schema).items():
        lines += _section(f"`{path}` ({name})", schema["$defs"][name], getattr(spec, name), docs.get(name, {}))
    return "\n".join(lines)


def _commands(parser: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    """Every command under ``parser`` (itself first): its full name, its one-line help and its parser."""
    yield path, parser.description or "", parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                for full, description, found in _commands(sub, f"{path} {name}"):
                    yield full, description or helps.get(name, ""), found


def _argument(action: argparse.Action) -> list[str]:
    if action.option_strings:
        name = ", ".join(action.option_strings)
        if action.nargs != 0:
            name += f" {action.metavar or action.dest.upper()}"
    else:
        name = str(action.metavar or action.dest)
    default = "" if action.default in (None, False, argparse.SUPPRESS) or action.required else repr(action.default)
    choices = ", ".join(str(choice) for choice in action.choices or [])
    return [f"`{name}`", "yes" if action.required else "", _cell(default), _cell(choices), _cell(action.help or "")]


def cli_markdown() -> str:
    """Every ``gradeflow`` command: its usage and a table of its arguments, in the parser's order."""
    from gradeflow.cli.main import _parser

    lines: list[str] = []
    for path, description, parser in _commands(_parser(), "gradeflow"):
        parser.prog = path
        usage = " ".join(parser.format_usage().removeprefix("usage: ").split())
        lines += [f"### {path}", "", _cell(description), "", f"`{usage}`", ""]
        shown = [
            action
            for action in parser._actions
            if action.help != argparse.SUPPRESS
            and not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction))
        ]
        if shown:
            lines += ["| argument | required | default | choices | meaning |", "|---|---|---|---|---|"]
            lines += ["| " + " | ".join(_argument(action)) + " |" for action in shown]
            lines.append("")
    return "\n".join(lines)


def documented_codes(markdown: str) -> list[str]:
    """The codes the reason-code page has an entry for (a ``### `code` `` heading each), in order."""
    return REASON_HEADING.findall(markdown)


def reason_codes_markdown(markdown: str) -> str:
    """The reason-code page with the registry's meaning under each entry; ``GenerationError`` on a mismatch."""
    from gradeflow.models.reasons import BUILTIN_REASON_CODES

    documented = documented_codes(markdown)
    missing = sorted(set(BUILTIN_REASON_CODES) - set(documented))
    unknown = sorted(set(documented) - set(BUILTIN_REASON_CODES))
    twice = sorted({code for code in documented if documented.count(code) > 1})
    if missing or unknown or twice:
        raise GenerationError(
            f"{REASON_PAGE}: no entry for {missing}, entries for unregistered codes {unknown}, twice: {twice}"
        )
    return REASON_HEADING.sub(
        lambda found: f"{found.group(0)}\n\n*{_plain(BUILTIN_REASON_CODES[found.group(1)])}* (the registry's words)",
        markdown,
    )


GENERATED = {"task-spec": task_spec_markdown, "cli": cli_markdown}


def expand(markdown: str, page: str) -> str:
    """A page's Markdown with its generated parts in place (``page`` relative to docs/)."""
    unknown = [name for name in MARKER.findall(markdown) if name not in GENERATED]
    if unknown:
        raise GenerationError(f"{page}: unknown generated part {unknown}; known: {sorted(GENERATED)}")
    markdown = MARKER.sub(lambda found: GENERATED[found.group(1)](), markdown)
    return reason_codes_markdown(markdown) if page == REASON_PAGE else markdown


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """MkDocs hook: expand the page's generated parts as the site is built."""
    from mkdocs.exceptions import PluginError

    try:
        return expand(markdown, page.file.src_uri)
    except GenerationError as exc:
        raise PluginError(str(exc)) from None


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Print a generated part of the documentation site.")
    parser.add_argument("part", choices=[*GENERATED, "reason-codes"])
    part = parser.parse_args(argv).part
    if part == "reason-codes":
        print(reason_codes_markdown((ROOT / "docs" / REASON_PAGE).read_text()))
    else:
        print(GENERATED[part]())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
