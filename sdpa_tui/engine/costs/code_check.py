"""The advice's code run against the call before it is offered (a child process with torch).

``python -m sdpa_tui.engine.costs.code_check`` reads ``{"calls": [CodesToCheck, ...]}`` as JSON on stdin and writes one JSON
line per call on stdout, in order: ``{name: {"matched": x} or {"error": "..."}}`` for each of its codes. The inputs
are the lab's (``calls.Inputs``: the call's shapes, dtype and device) with the mask the call passed, of its form
(``call_match.passed_mask``). SDPA is called as the call was (its mask or ``is_causal``, ``dropout_p``, ``scale``,
``enable_gqa``); each code, the text the advice shows, is executed as it is, with ``q, k, v`` and ``attn_mask`` in
scope, and its ``out`` compared with the call's within the tolerance of the call's dtype (of the dtype it computes
in where it changes the numerics). A call with dropout draws its dropout after the same seed for both: the same
backend draws the same, another does not (an H100, torch 2.11, 2026-11-27: fp16 [2, 8, 512, 64] with dropout 0.1,
Flash's, Mem-efficient's and MATH's outputs 0.8 to 1.0 (relative) from cuDNN's; fp16 calls without dropout agreed
within 8e-4), so there a switch to another backend is refused and its note says why. A code whose output differs, or that raises, gets its
reason, and is not offered.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from ...core.calls.call_code import CodeCheck, CodesToCheck, OfferedCode
from ..measuring.environment import make_current
from ..measuring.sdpa_call import TORCH_DTYPES, Inputs
from .call_match import DIFFERS, DiffersFromTheCall, matched, passed_mask

SEED = 0


def check(call: CodesToCheck) -> dict[str, CodeCheck]:
    """Each of the call's codes run against it, by name."""
    device = torch.device(call.device)
    make_current(device)
    inputs = Inputs.make(call.workload, device)
    s = call.signature
    attn_mask = passed_mask(inputs, s, call.mask_form)
    q, k, v = (t.detach() for t in (inputs.q, inputs.k, inputs.v))
    with torch.no_grad():
        torch.manual_seed(SEED)
        own = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=s.dropout_p,
                                             is_causal=s.causal, scale=s.scale, enable_gqa=s.gqa)
        checks = {offered.name: _run(offered, own, {"q": q, "k": k, "v": v, "attn_mask": attn_mask})
                  for offered in call.codes}
    if s.dropout_p:  # seeded alike, yet each backend draws its dropout its own way (Flash, cuDNN, Mem-efficient)
        why = f" (the call has dropout_p={s.dropout_p:g}: where the code runs another backend, it draws other dropout)"
        why += "; not offered"
        return {name: replace(c, why=c.why.removesuffix("; not offered") + why) if c.why.startswith(DIFFERS) else c
                for name, c in checks.items()}
    return checks


def _run(offered: OfferedCode, own: torch.Tensor, names: dict[str, torch.Tensor | None]) -> CodeCheck:
    scope = {"torch": torch, "F": F, "SDPBackend": SDPBackend, "sdpa_kernel": sdpa_kernel, **names}
    torch.manual_seed(SEED)
    try:
        exec(compile(offered.code, "<advice code>", "exec"), scope)  # noqa: S102 - the code offered, run to check it
        out = scope.get("out")
        if not isinstance(out, torch.Tensor):
            return CodeCheck(None, "it assigns no tensor to out; not offered")
        dtype = TORCH_DTYPES[offered.numerics] if offered.numerics else own.dtype
        return CodeCheck(matched(out, own, dtype))
    except DiffersFromTheCall as exc:
        return CodeCheck(None, str(exc))
    except Exception as exc:  # noqa: BLE001 - a code that raises is not offered; the reason is its answer
        return CodeCheck(None, f"it raised {type(exc).__name__}: {exc}".splitlines()[0][:200] + "; not offered")


def main() -> int:
    calls = [CodesToCheck.from_dict(d) for d in json.loads(sys.stdin.read())["calls"]]
    for call in calls:
        try:
            answers = {name: {"matched": c.matched} if c.offered else {"error": c.why}
                       for name, c in check(call).items()}
        except Exception as exc:  # noqa: BLE001 - one call that cannot be rebuilt: each of its codes says why
            why = (f"the call could not be rebuilt to run its code: {type(exc).__name__}: {exc}".splitlines()[0][:200]
                   + "; not offered")
            answers = {offered.name: {"error": why} for offered in call.codes}
        sys.stdout.write(json.dumps(answers) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
