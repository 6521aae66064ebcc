"""Apply a watch report's top advice to a program's source, as a user would: the advised line in place of the
call's ``sdpa_kernel`` context (a backend), ``is_causal=True`` in place of the mask, or the padded call in place of
the call (rewrites)."""

from __future__ import annotations

import re


def apply_top_advice(source: str, top: dict) -> str:
    lines = source.splitlines()
    if top["variant"] == "backend":
        i = next(i for i, line in enumerate(lines) if line.lstrip().startswith("with sdpa_kernel("))
        indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
        lines[i] = indent + top["code"]
    elif top["variant"] == "is_causal":
        i = next(i for i, line in enumerate(lines) if "scaled_dot_product_attention(" in line and "attn_mask=" in line)
        lines[i] = re.sub(r"attn_mask=\w+", "is_causal=True", lines[i])
    elif top["variant"] == "pad_head_dim":  # the code is the whole call: ``out = F.scaled_dot_product_attention(...)``
        i = next(i for i, line in enumerate(lines) if "scaled_dot_product_attention(" in line)
        indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
        lines[i] = indent + top["code"]
    else:
        raise ValueError(f"no way to apply a {top['variant']!r} change here")
    return "\n".join(lines) + "\n"
