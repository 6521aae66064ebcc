"""The help screen: every key, and what the three clocks mean."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

CLOCKS = """
## The three clocks

- **kernel**: the sum of the GPU activities (kernels, memsets, copies) of one call, from
  CUPTI through torch.profiler, captured in short bursts, never while timing.
- **GPU/call**: device time per call without host launch overhead: calls captured in a
  CUDA graph (at least 0.5 ms of GPU work), replayed back to back, the span between two
  CUDA events divided by the calls; it keeps the gaps between kernels, and moves with
  the GPU's SM clock (events around a loop where capture is impossible).
- **eager**: what an eager model sees: back-to-back calls timed on the host, divided by
  the count. At small shapes this is mostly launch overhead.

On the CPU, *kernel* is the sum of the self times of the ATen ops of one call, and GPU/call does not apply.

**% of peak** is TFLOP/s over a matmul measured on this device when the engine starts: on
a GPU an 8192³ matmul in the workload's dtype; on the CPU the faster of a 2048³ fp32 and a
512³ matmul in the workload's dtype (a CPU fp16 matmul is far slower than SDPA's own CPU
kernels). It is left out (n/a) for a backend that runs faster than that matmul, where the
matmul is no ceiling.

**blocks/SM** (kernel line): the main kernel's grid blocks over the GPU's SM count, from
CUPTI. Below 1, some SMs get no block at all; it says how full the launch is, not how many
warps each SM keeps resident. It is the one unit shown for every kernel (CUPTI's occupancy
estimate is 0 for many attention kernels; it stays in the exports as `occupancy`).

**util** (GPU panel) is NVML's reading: the share of its last sample window (1/6 s to 1 s,
set by the driver) in which a kernel of any process ran, not how busy the SMs were.
**engine** is the share of the last 5 s that the engine's timed calls kept the device busy
(their measured GPU time over wall time). The engine rests between slices (each backend is
sampled about four times a second), so util can read low, or 0 % in a gap.

**Dispatch** shows what SDPA picks with the flags as they are (`torch._fused_sdp_choice`)
and the order it tries backends in. A backend that cannot run the workload says
*not eligible* with torch's own reason.
"""


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close")]

    def __init__(self, bindings: list[Binding]) -> None:
        super().__init__()
        self.keys = bindings

    def compose(self) -> ComposeResult:
        rows = "\n".join(
            f"| `{b.key_display or b.key}` | {b.tooltip or b.description or b.action} |" for b in self.keys
        )
        text = "# sdpa-tui keys\n\n| key | action |\n|---|---|\n" + rows + "\n| `ctrl+p` | command palette |\n" + CLOCKS
        with VerticalScroll(id="help-body"):
            yield Markdown(text)
