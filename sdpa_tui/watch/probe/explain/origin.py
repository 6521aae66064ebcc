"""Where an SDPA call comes from: the first frame outside the libraries, and the nn.Module path.

Computed on a signature's first calls and on calls inside profiler bursts (walking frames
costs microseconds), never on every call.
"""

from __future__ import annotations

import os
import site
import sys
import sysconfig
import weakref
from types import FrameType

import torch

from ....core.installation import PACKAGE_DIR

_OWN_DIR = PACKAGE_DIR + os.sep
_LIBRARY_DIRS = (os.path.dirname(os.path.abspath(torch.__file__)) + os.sep, _OWN_DIR)
def site_dirs() -> list[str]:
    """The interpreter's site-packages folders (none where ``site`` cannot say: an embedded interpreter)."""
    try:
        return [*site.getsitepackages(), site.getusersitepackages()]
    except AttributeError:
        return []


_NAMES: "weakref.WeakKeyDictionary[torch.nn.Module, dict[int, str]]" = weakref.WeakKeyDictionary()
"""Per outermost module: each submodule's name, by id (named_modules() walks the whole model)."""
_LIBRARY_NAMES = ("transformers", "accelerate", "diffusers", "timm", "runpy", "peft")
"""Model libraries, named anywhere in a frame's path (a source checkout of transformers counts too)."""
_INSTALLED_LIBRARIES = ("kernels",)
"""Libraries whose names are too common to match anywhere in a path (a program's own ``kernels/`` folder): one
only where it is installed. Hugging Face's ``kernels`` wraps every transformers model's forward (transformers 5.25
on), and its wrapper's line would otherwise be every such call's site."""
_SITE_DIRS = tuple(sorted({os.path.join(p, "") for key in ("purelib", "platlib")
                           if (p := sysconfig.get_paths().get(key))} | {os.path.join(p, "") for p in site_dirs()},
                          key=len, reverse=True))
"""Where installed packages live: a library file's site is named from its package (``transformers/...``)."""


def installed_path(filename: str) -> str | None:
    """A file under a site-packages folder from its package (``kernels/_internals/layer/layer.py``); else None."""
    return next((filename[len(d):] for d in _SITE_DIRS if filename.startswith(d)), None)


def installed_package(filename: str) -> str | None:
    """The top-level package of a file under a site-packages folder (``kernels`` for ``…/kernels/layer.py``)."""
    path = installed_path(filename)
    return path.replace("\\", "/").split("/", 1)[0] if path is not None else None


def is_library(filename: str) -> bool:
    if filename.startswith(_LIBRARY_DIRS) or filename.startswith("<frozen"):
        return True
    parts = filename.replace("\\", "/").split("/")
    return any(name in parts for name in _LIBRARY_NAMES) or installed_package(filename) in _INSTALLED_LIBRARIES


def is_own(filename: str) -> bool:
    """A frame of sdpa-tui itself (the wrapper, the probe): never named as a call's site."""
    return filename.startswith(_OWN_DIR)


_PROGRAM_FILES: dict[str, str | None] = {}
"""A frame's file → its short path, or None for a library's: read once per file (sampled calls walk the stack)."""


def program_file(filename: str) -> str | None:
    """The short path of a file of the program; None for torch's, sdpa-tui's and the model libraries'."""
    try:
        return _PROGRAM_FILES[filename]
    except KeyError:
        library = is_library(os.path.abspath(filename) if not filename.startswith("<") else filename)
        short = _PROGRAM_FILES[filename] = None if library else short_path(filename)
        return short


def call_site(frame: FrameType | None) -> str:
    """``file:line`` of the first frame outside torch, sdpa-tui and the model libraries."""
    first_seen = None
    while frame is not None:
        if first_seen is None:
            first_seen = frame
        short = program_file(frame.f_code.co_filename)
        if short is not None:
            return f"{short}:{frame.f_lineno}"
        frame = frame.f_back
    if first_seen is not None:
        return f"{short_path(first_seen.f_code.co_filename)}:{first_seen.f_lineno}"
    return "?"


def short_path(filename: str) -> str:
    """Relative to the working directory when the file is under it; an installed package's file from its package
    (``transformers/integrations/sdpa_attention.py``); else the path as it is."""
    try:
        rel = os.path.relpath(filename)
    except ValueError:
        return filename
    if not (rel == os.pardir or rel.startswith(os.pardir + os.sep)):
        return rel
    return installed_path(filename) or filename


def module_path(frame: FrameType | None) -> str | None:
    """``model.layers.3.self_attn``: the innermost nn.Module on the stack, named from the outermost.

    The name is the one ``named_modules()`` of the outermost module on the stack gives, with the
    outermost module's class in front (``LlamaForCausalLM:model.layers.0.self_attn``).
    """
    modules: list[torch.nn.Module] = []
    while frame is not None:
        owner = frame.f_locals.get("self") if "self" in frame.f_code.co_varnames[:1] else None
        if isinstance(owner, torch.nn.Module) and (not modules or modules[-1] is not owner):
            modules.append(owner)
        frame = frame.f_back
    if not modules:
        return None
    inner, root = modules[0], modules[-1]
    if inner is root:
        return type(root).__name__
    names = _NAMES.get(root)
    if names is None or id(inner) not in names:  # a module added since: named again
        names = _NAMES[root] = {id(module): name for name, module in root.named_modules()}
    name = names.get(id(inner))
    return f"{type(root).__name__}:{name}" if name is not None else f"{type(root).__name__}:…{type(inner).__name__}"


def caller_frame(depth: int) -> FrameType | None:
    try:
        return sys._getframe(depth + 1)
    except ValueError:
        return None
