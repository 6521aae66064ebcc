"""Apply a watch report's top advice to a program's source, as a user would: the advised switch in place of the
``sdpa_kernel`` context around the program's loop (a backend), ``is_causal=True`` in place of the mask, or the padded
call in place of the call (rewrites)."""

from __future__ import annotations

import re


def apply_top_advice(source: str, top: dict) -> str:
    lines = source.splitlines()
    if top["variant"] == "backend":  # the code's first line, the switch, in place of the program's around its loop
        i = next(i for i, line in enumerate(lines) if line.lstrip().startswith("with sdpa_kernel("))
        indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
        lines[i] = indent + top["code"].splitlines()[0]
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
