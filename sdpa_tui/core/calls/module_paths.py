"""Module paths that differ only in layer numbers, said once: ``model.layers.{0..31}.self_attn``."""

from __future__ import annotations

import re
from collections.abc import Iterable

_NUMBER = re.compile(r"(?<=\.)\d+(?=\.|$)")


def _ranges(numbers: list[int]) -> str:
    """``[0, 1, 2, 5, 7, 8]`` → ``0..2,5,7..8``."""
    parts: list[str] = []
    start = prev = numbers[0]
    for n in numbers[1:] + [None]:  # type: ignore[list-item]
        if n is not None and n == prev + 1:
            prev = n
            continue
        parts.append(str(start) if start == prev else f"{start}..{prev}")
        if n is not None:
            start = prev = n
    return ",".join(parts)


def collapse(paths: Iterable[str]) -> list[str]:
    """Paths grouped where only one dotted number differs, in first-seen order; the others as they are.

    Only the first number that varies is collapsed (``layers.{0..31}.attn``); a path with no
    number, or alone in its group, is kept whole.
    """
    seen = list(dict.fromkeys(p for p in paths if p))
    groups: dict[tuple[str, int], list[tuple[int, str]]] = {}
    order: list[tuple[str, int] | str] = []
    for path in seen:
        matches = list(_NUMBER.finditer(path))
        key: tuple[str, int] | str = path
        for i, m in enumerate(matches):
            pattern = path[: m.start()] + "{}" + path[m.end():]
            if any(_fits(pattern, other) for other in seen if other != path):
                key = (pattern, i)
                groups.setdefault(key, []).append((int(m.group()), path))
                break
        if key not in order:
            order.append(key)
    out = []
    for key in order:
        if isinstance(key, str):
            out.append(key)
            continue
        members = groups[key]
        if len(members) == 1:
            out.append(members[0][1])
        else:
            out.append(key[0].replace("{}", "{" + _ranges(sorted({n for n, _ in members})) + "}"))
    return out


def _fits(pattern: str, path: str) -> bool:
    head, tail = pattern.split("{}", 1)
    middle = path[len(head): len(path) - len(tail)] if len(path) > len(head) + len(tail) - 1 else ""
    return path.startswith(head) and path.endswith(tail) and middle.isdigit()
