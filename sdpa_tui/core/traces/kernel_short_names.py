"""Short readable kernel names, and the parsing of the demangled C++ signatures CUPTI reports.

:func:`short_name` is what the tables show; :func:`function_and_template` (a signature's own function name and
template arguments) is what :mod:`.kernel_names` identifies kernels from.
"""

from __future__ import annotations

import re
from functools import lru_cache

MAX_SHORT = 60
_WRAPPERS = frozenset({"Kernel", "Kernel2", "device_kernel"})  # cutlass launchers


def _split(name: str) -> tuple[str, str, str] | None:
    """A demangled signature as (qualified name, template args, parameters); None if unbalanced."""
    s = name.strip()
    if s.startswith("void "):
        s = s[5:]
    s = s.replace("(anonymous namespace)", "anonymous_namespace")
    base, template, params = [], "", ""
    depth, start = 0, 0
    for i, ch in enumerate(s):
        if ch in "<(":
            if depth == 0:
                start = i
            depth += 1
        elif ch in ">)" and s[i - 1 : i + 1] != "->":
            depth -= 1
            if depth < 0:
                return None
            if depth == 0:
                group = s[start + 1 : i]
                if ch == ">" and not template:
                    template = group
                elif ch == ")":
                    params = group
        elif depth == 0:
            base.append(ch)
    if depth != 0:
        return None
    return "".join(base).strip(), template, params


def _first_arg(template: str) -> str:
    depth = 0
    for i, ch in enumerate(template):
        depth += (ch in "<(") - (ch in ">)")
        if ch == "," and depth == 0:
            return template[:i]
    return template


def function_and_template(name: str) -> tuple[str, str]:
    """The kernel's own function name (namespaces dropped) and its template arguments."""
    parts = _split(name)
    if parts is None:
        return name.strip(), ""
    base, template, _ = parts
    func = base.split("::")[-1]
    if func in _WRAPPERS and template:
        inner = _split(_first_arg(template))
        if inner and inner[0]:
            return inner[0].split("::")[-1], inner[1]
    return func, template


def _clip(text: str) -> str:
    return text if len(text) <= MAX_SHORT else text[: MAX_SHORT - 1] + "…"


def _is_plain(name: str) -> bool:
    """Names that are not C++ signatures: CPU ops, memsets/memcpys, generated kernels."""
    return name.startswith(("aten::", "Memset", "Memcpy")) or not any(c in name for c in "<(")


@lru_cache(maxsize=4096)
def short_name(name: str) -> str:
    """A short readable name, at most 60 characters ('…' marks a cut).

    C++ signatures lose ``void``, namespaces, template arguments and parameters
    (``pytorch_flash::flash_fwd_splitkv_kernel<...>(...)`` -> ``flash_fwd_splitkv_kernel``);
    cutlass launchers show the kernel they launch. cuDNN generated names drop the
    boilerplate ``generated_fort_native_``, a trivial ``_cga1x1x1`` and ``_kernel0_0``.
    CPU ops (``aten::bmm``) and names like ``Memset (Device)`` stay as they are.
    """
    name = name.strip()
    if name.startswith("cudnn_generated_"):
        trimmed = re.sub(r"^cudnn_generated_(fort_native_)?", "cudnn_", name)
        trimmed = re.sub(r"(_cga1x1x1)?_kernel\d+_\d+$", "", trimmed)
        return _clip(trimmed)
    if _is_plain(name):
        return _clip(name)
    return _clip(function_and_template(name)[0] or name)

