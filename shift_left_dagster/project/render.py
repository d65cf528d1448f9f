"""A table hierarchy (`report.hierarchy`) written as JSON, YAML or a tree, for `shift-left-dagster report`.

Apart from the reports themselves so `inventory` never loads the YAML writer.
"""

from __future__ import annotations

import json
from typing import Any

import yaml


def render(report: dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(report, indent=2)
    if fmt == "yaml":
        return yaml.safe_dump(report, sort_keys=False)
    if fmt == "tree":
        return "\n".join(_tree_lines(report))
    raise ValueError(f"unknown format {fmt!r}: use json, yaml or tree")


def _tree_lines(node: dict[str, Any], root: bool = True) -> list[str]:
    """Parents recursively (<-); children (->) only under the root, where they are the point."""
    label = f"{node['table_name']} ({node['type']}, {node['complexity']['state_form'].lower()})"
    parents = node.get("parents", [])
    children = node.get("children", []) if root else []
    branches = [("<- ", _tree_lines(p, root=False)) for p in parents]
    branches += [("-> ", _child_lines(c)) for c in children]
    lines = [label]
    for index, (arrow, sub) in enumerate(branches):
        lines.extend(_branch(sub, index == len(branches) - 1, arrow))
    return lines


def _child_lines(node: dict[str, Any]) -> list[str]:
    lines = [f"{node['table_name']} ({node['type']}, {node['complexity']['state_form'].lower()})"]
    children = node.get("children", [])
    for index, child in enumerate(children):
        lines.extend(_branch(_child_lines(child), index == len(children) - 1, "-> "))
    return lines


def _branch(lines: list[str], last: bool, arrow: str) -> list[str]:
    head = ("└── " if last else "├── ") + arrow
    rest = "    " if last else "│   "
    return [head + lines[0]] + [rest + line for line in lines[1:]]
