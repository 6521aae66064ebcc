"""SDPA calls inside ``torch.compile``'d graphs: counted per run of each graph Dynamo builds.

Compiled code never calls the Python wrapper, so the probe hooks the point where Dynamo hands
each graph it captured to the compiler (``torch._TorchCompileInductorWrapper.__call__`` and
``torch._TorchCompileWrapper.__call__``, what ``torch.compile`` builds for every backend). There
it reads the graph's SDPA nodes (shapes, dtype, mask, causal, GQA, scale from the nodes' fake
example values; the source line from their stack trace; the module path from Dynamo's module
stack) and wraps the compiled callable so that each run adds one to each of its SDPA calls:
exact counts, a few attribute increments per graph run, nothing added to the graph (no graph
break, no recompile). The backend the graph runs, its kernels and time come from the profiler
bursts (the backend op under the compiled region, matched by shapes and dtype).
Private torch APIs: where they are missing the hook is not installed and the report says so.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Protocol

import torch

from ...core.calls.call_signature import CallSignature
from ...core.calls.watched_calls import CallStats, OutputCheck
from .explain import choice
from .explain.flag_state import FlagState
from .kernels.bursts import KernelBursts
from .kernels.profile_readings import ReadingSink
from .rebindings import Rebindings

COMPILED_NOT_CHECKED = "inside a compiled graph: its output is not checked (the graph runs without the wrapper)"

_STACK_LINE = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')
_PATCHED = "__sdpa_tui_patched__"


class GraphProbe(Protocol):
    """What the graph hook needs of the probe."""

    flag_state: FlagState
    sink: ReadingSink
    bursts: KernelBursts
    special: bool

    def graph_run(self, entries: list, compiled, args, kwargs): ...


@dataclass(frozen=True)
class GraphCall:
    """One SDPA node of a compiled graph."""

    signature: CallSignature
    site: str
    function: str
    modules: tuple[str, ...]
    args: tuple  # (q, k, v, mask, dropout_p, is_causal, scale, enable_gqa) as fake values and constants


def _is_sdpa(node) -> bool:
    return node.op == "call_function" and getattr(node.target, "__name__", "") == "scaled_dot_product_attention"


def _value(arg):
    return arg.meta.get("example_value") if isinstance(arg, torch.fx.Node) else arg


def _ints(shape) -> tuple[int, ...]:
    out = []
    for d in shape:
        try:
            out.append(int(d))
        except (TypeError, ValueError):  # a symbolic size: its hint where there is one
            out.append(int(getattr(getattr(d, "node", None), "hint", -1) or -1))
    return tuple(out)


def _site(node) -> tuple[str, str]:
    from .explain.origin import is_library, is_own, short_path

    frames = [f for f in _STACK_LINE.findall(node.meta.get("stack_trace") or "") if not is_own(f[0])]
    # the innermost frame of the program's own code; where the graph holds only libraries' frames (a compiled
    # transformers model), the innermost library frame: never sdpa-tui's wrapper, which Dynamo traces through
    own = [f for f in frames if not is_library(f[0])] or frames
    if not own:
        return "?", "?"
    path, line, function = own[-1]
    return f"{short_path(path)}:{line}", function


def _modules(node) -> tuple[str, ...]:
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ()
    path, cls = list(stack.values())[-1][:2]
    name = re.sub(r"^L\['self'\]\.?|^L\['[^']+'\]\.?", "", str(path))
    name = re.sub(r"\[(\d+)\]", r".\1", name).replace("._modules['", ".").replace("']", "")
    return (name or getattr(cls, "__name__", str(cls)),)


def graph_calls(gm, flags: tuple[str, ...], priority: tuple[str, ...]) -> list[GraphCall]:
    """The SDPA calls of one Dynamo graph, in graph order."""
    found = []
    names = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")
    defaults = (None, None, None, None, 0.0, False, None, False)
    for node in gm.graph.nodes:
        if not _is_sdpa(node):
            continue
        given = dict(zip(names, node.args))
        given.update(node.kwargs)
        args = tuple(_value(given.get(n, d)) for n, d in zip(names, defaults))
        q, k, v, mask = args[:4]
        if not all(isinstance(t, torch.Tensor) for t in (q, k, v)):
            continue
        grad = torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v))
        signature = CallSignature(
            q_shape=_ints(q.shape), kv_shape=_ints(k.shape), dtype=str(q.dtype), device=str(q.device),
            mask="none" if mask is None else ("bool" if mask.dtype == torch.bool else "float"),
            mask_shape=None if mask is None else _ints(mask.shape), causal=bool(args[5]),
            dropout_p=float(args[4]), scale=args[6], gqa=bool(args[7]), grad=grad, flags=flags, priority=priority,
        )
        site, function = _site(node)
        found.append(GraphCall(signature, site, function, _modules(node), args))
    return found


def mask_strides(call: GraphCall) -> tuple[int, ...] | None:
    """The mask's strides as the graph has them (an expanded mask has a stride of 0), or None without a mask."""
    mask = call.args[3]
    return _ints(mask.stride()) if isinstance(mask, torch.Tensor) else None


def eager_choice(call: GraphCall) -> tuple[str | None, str, dict[str, str]]:
    """What eager SDPA picks for the same arguments (and why not the others), asked on empty tensors."""
    def real(t):
        if not isinstance(t, torch.Tensor):
            return t
        return torch.empty_strided(_ints(t.shape), _ints(t.stride()), dtype=t.dtype, device=t.device)

    try:
        q, k, v, mask, dropout_p, causal, scale, gqa = (real(a) for a in call.args)
        backend, error = choice.chosen_backend(q, k, v, mask, dropout_p, causal, scale, gqa)
        reasons = choice.why_not(backend, call.signature.flags, q, k, v, mask, dropout_p, causal, scale, gqa)
        return backend, error, reasons
    except Exception as exc:  # noqa: BLE001 - explaining must never break the compile
        return None, f"sdpa-tui could not ask torch: {exc}", {}


def wrap_compiled(compiled, on_run):
    """``compiled`` with ``on_run(compiled, args)`` doing the call; its attributes (boxed calling) kept."""
    if not callable(compiled):
        return compiled

    def run(*args, **kwargs):
        return on_run(compiled, args, kwargs)

    if isinstance(compiled, type(run)):
        functools.update_wrapper(run, compiled)
    elif getattr(compiled, "_boxed_call", False):
        run._boxed_call = True  # type: ignore[attr-defined]
    return run


def traces_aten(wrapper) -> bool:
    """The compiler traces the graph down to aten ops (Inductor, ``aot_*``): there SDPA's choice is made once, at
    the trace, and a MATH choice becomes the compiler's own matmul and softmax ops, with no SDPA op left to see.
    ``backend="eager"`` runs the captured graph as it is, so SDPA dispatches at each run as in eager code."""
    name = str(getattr(wrapper, "compiler_name", ""))
    return type(wrapper).__name__ == "_TorchCompileInductorWrapper" or name.startswith("aot")


def hook_compilers(on_graph, rebind: Rebindings) -> bool:
    """Call ``on_graph(gm, compiled, traces_aten) -> compiled`` for every graph torch.compile's wrappers compile."""
    done = False
    for name in ("_TorchCompileInductorWrapper", "_TorchCompileWrapper"):
        cls = getattr(torch, name, None)
        call = getattr(cls, "__call__", None)
        if cls is None or call is None or getattr(call, _PATCHED, False):
            continue

        def patched(self, model_, inputs_, *args, __call=call, **kwargs):
            return on_graph(model_, __call(self, model_, inputs_, *args, **kwargs), traces_aten(self))

        setattr(patched, _PATCHED, True)
        functools.update_wrapper(patched, call)
        rebind.set(cls, "__call__", patched)
        done = True
    return done


def watch_graphs(probe: "GraphProbe", rebind: Rebindings) -> None:
    """Count the SDPA calls of every graph torch.compile builds from now on (see the module's doc)."""

    def on_graph(gm, compiled, aten: bool):
        try:
            calls = graph_calls(gm, probe.flag_state.flags(probe.flag_state.token), choice.priority_order())
        except Exception:  # noqa: BLE001 - a graph the probe cannot read runs uncounted, never broken
            return compiled
        if not calls:
            return compiled
        entries = []
        for call in calls:
            probe.flag_state.frozen = True
            try:
                eager, error, reasons = eager_choice(call)
            finally:
                probe.flag_state.frozen = False
            decomposed = aten and eager == "MATH"  # seen on the H100 and the CPU: no SDPA op under the graph
            stats = CallStats(call.signature, site=call.site, module=call.modules[0] if call.modules else None,
                              backend="MATH" if decomposed else None, choice_error=error, why_not=reasons,
                              modules=list(call.modules), compiled=True, compiled_fn=call.function,
                              eager_backend=eager, decomposed=decomposed, check=OutputCheck(note=COMPILED_NOT_CHECKED),
                              mask_strides=mask_strides(call))
            entry = probe.sink.add(stats, call.signature.device.startswith("cuda"))
            entry.wanted = entry.wanted and not decomposed  # no op of its own will ever be under the graph
            entries.append(entry)
        probe.bursts.signature_seen()
        probe.special = probe.special or probe.bursts.due

        def on_run(fn, args, kwargs):
            for entry in entries:
                entry.count += 1
            if probe.special or entries[0].wanted_any:
                return probe.graph_run(entries, fn, args, kwargs)
            return fn(*args, **kwargs)

        for entry in entries:
            entry.group = entries
        return wrap_compiled(compiled, on_run)

    hook_compilers(on_graph, rebind)
