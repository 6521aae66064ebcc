"""Record annotated Chrome traces of real calls (for parser tests), one per backend and direction.

    python3 scripts/diagnostics/record_fixtures.py OUTDIR      # on a GPU machine
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402

from sdpa_tui.core.backends import ALL_BACKENDS  # noqa: E402
from sdpa_tui.core.workload import Workload  # noqa: E402
from sdpa_tui.engine.measuring.sdpa_call import Inputs, forced  # noqa: E402
from sdpa_tui.engine.profiler.profiling import burst  # noqa: E402


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    device = torch.device("cuda")
    for direction in ("fwd+bwd",):
        inputs = Inputs.make(Workload(direction=direction), device)
        step = inputs.step()
        for backend in ALL_BACKENDS:
            with forced((backend,)):
                for _ in range(3):
                    step()
                result = burst(step, device, calls=2)
            name = f"{backend.value}_{direction.replace('+', '_')}_2calls.json"
            (out / name).write_text(json.dumps(result.trace))
            print(name, [len(k) for k in [result.kernels]], [round(x, 1) for x in result.kernel_us])
    return 0


if __name__ == "__main__":
    sys.exit(main())
