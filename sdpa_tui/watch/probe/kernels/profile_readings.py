"""The probe's signatures (entries) and what the profiler bursts tell about each: kernels, time, backward.

A window's trace is read in a helper process (:mod:`window_files`); the reading says: a
call the wrapper ran in a range ``sdpa-tui#<index>`` belongs to that entry (``…#first``: the
signature's first call, whose kernels are kept but whose time is not a sample); a backend op
in a compiled graph belongs to the compiled entry with the same q, k, v shapes and dtype.
"""

from __future__ import annotations

from dataclasses import replace

from ....core.calls.watched_calls import BackwardStats, CallStats, Captures
from ....core.traces.call_profile import ProfiledCall, ProfileReading
from ....core.traces.window_reading import FIRST_SUFFIX, WindowReading

MAX_SAMPLES = 256
WANTED_SAMPLES = 8
"""A CUDA signature is profiled again until this many of its calls were (one on the CPU: its backend)."""
_TORCH_TYPES = {"torch.float16": "c10::Half", "torch.bfloat16": "c10::BFloat16", "torch.float32": "float",
                "torch.float64": "double"}


def keep_sample(samples: list[float], value: float) -> None:
    """Append a value, keeping the last ``MAX_SAMPLES``."""
    samples.append(value)
    if len(samples) > MAX_SAMPLES:
        del samples[: len(samples) - MAX_SAMPLES]


class Entry:
    """One signature in this process. ``count``, ``wanted`` and ``leads_due`` are read on the wrapper's fast path."""

    __slots__ = ("count", "stats", "index", "cuda", "wanted", "profiled", "group", "gradients", "leads_due")

    def __init__(self, stats: CallStats, index: int, cuda: bool, profiling: bool = True) -> None:
        self.count = 0
        self.stats = stats
        self.index = index
        self.cuda = cuda
        # compiled on the CPU: its backend is read from one burst; bursts off: nothing is wanted
        self.wanted = profiling and (cuda or stats.compiled)
        self.profiled = 0
        self.group: list[Entry] = [self]  # a compiled graph's entries run together
        self.gradients = None  # the backward sentinel's state (``gradient_sentinel.SignatureGradients``), grad calls
        self.leads_due = False  # the host's lead is being read at each call of a batch (``host_lead.py``): slow path

    @property
    def needed(self) -> int:
        """Profiled calls that cover this signature."""
        return WANTED_SAMPLES if self.cuda else 1

    @property
    def wanted_any(self) -> bool:
        return any(e.wanted for e in self.group)

    def note_module(self, path: str | None) -> None:
        modules = self.stats.modules
        if path and path not in modules:
            modules.append(path)

    def note_site(self, site: str, calls: int) -> None:
        """A noted call at ``site``, standing for ``calls`` calls (more than 1: sampled)."""
        stats = self.stats
        stats.sites[site] = stats.sites.get(site, 0) + calls
        if calls > 1:
            stats.sites_sampled = True

    def snapshot(self) -> CallStats:
        s = self.stats
        back = s.backward
        return CallStats(
            s.signature, self.count, s.site, s.module, s.backend, s.choice_error, dict(s.why_not),
            list(s.kernel_us), list(s.host_us), list(s.kernels), s.first_call_us,
            BackwardStats(back.backend, list(back.kernel_us), list(back.kernels), list(back.lead_us)) if back else None,
            list(s.modules), s.profiled_us, s.compiled, s.count_exact, s.compiled_fn, s.eager_backend, s.mask_causal,
            replace(s.check, backward=s.check.backward.copy() if s.check.backward else None), s.decomposed,
            s.mask_strides, dict(s.sites), s.sites_sampled, mask_form=s.mask_form,
            lengths=[dict(h) for h in s.lengths], layouts=s.layouts, lead_us=list(s.lead_us),
            lead_batches=list(s.lead_batches),
        )


def _names(call: ProfiledCall) -> list[str]:
    return [a.name for a in call.activities]


class ReadingSink:
    """The entries, and what each burst's reading adds to them."""

    def __init__(self, profiling: bool = True) -> None:
        self.profiling = profiling
        self.entries: list[Entry] = []
        self.compiled_kernels: list[str] = []
        self.readings = 0

    def add(self, stats: CallStats, cuda: bool) -> Entry:
        entry = Entry(stats, len(self.entries), cuda, self.profiling)
        self.entries.append(entry)
        return entry

    def apply_window(self, window: WindowReading, captures: Captures) -> None:
        """What one profiler window says of each entry; the window's GPU time and trouble to ``captures``. A window
        whose CUDA calls show no GPU work at all (CUPTI recorded nothing: a teardown inside it, for one) samples none
        of them: their signatures stay wanted."""
        reading = window.reading
        if reading.untimed:
            captures.untimed += 1
        cuda = [call for call in reading.ranged if (entry := self._entry(call)) is not None and entry.cuda]
        blind = bool(cuda) and not any(call.activities for call in cuda)
        if blind:
            captures.no_gpu += 1
        self.apply(reading, gpu_seen=not blind)
        self.compiled_kernels.extend(k for k in window.compiled_kernels if k not in self.compiled_kernels)
        captures.gpu_us += reading.gpu_us
        self.readings += 1

    def _entry(self, call: ProfiledCall) -> Entry | None:
        """The entry of a call the probe ran in a range ``sdpa-tui#<index>[#first]``."""
        try:
            return self.entries[int(call.name.split("#")[1])]
        except (IndexError, ValueError):
            return None

    def apply(self, reading: ProfileReading, gpu_seen: bool = True) -> None:
        """``gpu_seen``: the window recorded GPU work (else its CUDA calls are not counted as sampled)."""
        for call in reading.ranged:
            entry = self._entry(call)
            if entry is not None:
                self._add(entry, call, first=call.name.endswith(FIRST_SUFFIX), gpu_seen=gpu_seen)
        compiled = [e for e in self.entries if e.stats.compiled]
        seen: dict[tuple, int] = {}  # (graph run, shapes) → ops of those shapes in that run so far
        for call in reading.compiled:
            entry = self._graph_entry(call, seen) if call.graph else _match(compiled, call, 0)
            if entry is not None:
                entry.stats.backend = call.backend
                entry.stats.decomposed = False  # the compiler kept (or made) an SDPA op after all
                self._add(entry, call, first=False, gpu_seen=gpu_seen)
        for call in reading.compiled_backward:
            entry = _match(compiled, call, 1)
            if entry is not None:
                _add_backward(entry.stats, call.backend, call.kernel_us if call.activities else None,
                              _names(call))
                entry.stats.profiled_us += call.kernel_us

    def _graph_entry(self, call: ProfiledCall, seen: dict[tuple, int]) -> Entry | None:
        """In a run of a known graph, the k-th op of some shapes is the k-th of the graph's calls of them."""
        try:
            group = self.entries[int(call.graph.split("#")[1])].group
        except (IndexError, ValueError):
            return None
        fitting = [e for e in group if _match([e], call, 0) is not None]
        if not fitting:
            return None
        key = (call.graph, call.run, call.shapes[:3])
        k = seen.get(key, 0)
        seen[key] = k + 1
        return fitting[k % len(fitting)]

    def _add(self, entry: Entry, call: ProfiledCall, first: bool, gpu_seen: bool = True) -> None:
        stats = entry.stats
        stats.profiled_us += call.kernel_us + (call.backward_us or 0.0)
        if call.activities and not first:
            keep_sample(stats.kernel_us, call.kernel_us)
            stats.kernels = _names(call)
        elif call.activities and not stats.kernels:
            stats.kernels = _names(call)
        elif not entry.cuda and stats.compiled and call.cpu_us:
            keep_sample(stats.host_us, call.cpu_us)  # on the CPU the op does the work on the calling thread
        if call.backward is not None:
            _add_backward(stats, call.backward_backend, call.backward_us if call.backward else None,
                          _names(ProfiledCall("", None, call.backward)), None if first else call.backward_lead_us)
        if not first and (gpu_seen or not entry.cuda):
            entry.profiled += 1
        if entry.profiled >= entry.needed:
            entry.wanted = False


def _add_backward(stats: CallStats, backend: str | None, kernel_us: float | None, kernels: list[str],
                  lead_us: float | None = None) -> None:
    back = stats.backward = stats.backward or BackwardStats()
    back.backend = backend or back.backend
    if kernel_us is not None:
        keep_sample(back.kernel_us, kernel_us)
    if lead_us is not None:
        keep_sample(back.lead_us, lead_us)
    if kernels:
        back.kernels = kernels


def _match(entries: list[Entry], call: ProfiledCall, first_input: int) -> Entry | None:
    """The compiled entry whose q, k, v shapes and dtype are the op's inputs from ``first_input`` on."""
    shapes = call.shapes[first_input:first_input + 3]
    if len(shapes) < 3:
        return None
    for entry in entries:
        s = entry.stats.signature
        if first_input and not s.grad:
            continue  # a backward op: only calls autograd recorded have one
        if (shapes[0] == tuple(s.q_shape) and shapes[1] == tuple(s.kv_shape)
                and (not call.dtype or _TORCH_TYPES.get(s.dtype, s.dtype) == call.dtype)):
            return entry
    return None
