"""Why FlexAttention's code (as the advice gives it) could not be captured in a CUDA graph: each of the test's two
specs run as ``engine/costs/flex_cost.measure`` runs it, the capture's full error and Dynamo's recompiles printed.

    TORCH_LOGS=recompiles python3 scripts/diagnostics/diag_flex_capture.py
"""

import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402

from sdpa_tui.core.calls.flex_alternative import flex_spec  # noqa: E402
from sdpa_tui.core.calls.mask_forms import CAUSAL, CAUSAL_KEY_PADDING  # noqa: E402
from sdpa_tui.core.workload import Workload  # noqa: E402
from sdpa_tui.engine.costs import flex_cost  # noqa: E402
from sdpa_tui.engine.measuring.sdpa_call import Inputs  # noqa: E402

SPECS = [
    flex_spec(Workload(batch=4, heads=16, kv_heads=16, seq=2048, kv_seq=2048, head_dim=128, dtype="bf16",
                       mask="causal"), "cuda", CAUSAL),
    flex_spec(Workload(batch=2, heads=8, kv_heads=2, seq=1024, kv_seq=1024, head_dim=64, dtype="bf16",
                       mask="padding", direction="fwd+bwd"), "cuda", CAUSAL_KEY_PADDING),
]
for spec in SPECS:
    print("=== spec", spec.workload, "\n" + spec.code, flush=True)
    device = torch.device("cuda")
    inputs = Inputs.make(spec.workload, device)
    attn_mask, causal, key_keep = flex_cost.call_mask(inputs, spec.mask_form)
    step = flex_cost._step(flex_cost.run_code(spec, inputs, key_keep), inputs)
    for label, steps in (("eager x2", 2),):
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
        print(label, "ok", flush=True)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            step()
        graph.replay()
        torch.cuda.synchronize()
        print("capture ok", flush=True)
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        torch.cuda.synchronize()
