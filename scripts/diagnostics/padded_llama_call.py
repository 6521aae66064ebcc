"""The padded Llama's attention call that the packed-attention diagnostics time (``diag_packed_kernels.py``,
``diag_packed_host.py``): ``tests/watch_programs/hf_padded_packed.py``'s call on a GPU, [8, 16, seq, 64] bf16, key and
value heads repeated by transformers before SDPA, a causal and key-padding boolean [8, 1, seq, seq] mask, Q, K, V laid
out in memory as ``layouts`` says (transformers': queries a transposed [b, l, h, d] tensor, keys and values contiguous
after their heads were repeated), forward and forward+backward, with its packed codes (``core/calls/packed_alternative``)
run as the lab runs them."""

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from sdpa_tui.core.calls.call_signature import CallSignature
from sdpa_tui.core.calls.mask_forms import CAUSAL_KEY_PADDING
from sdpa_tui.core.calls.packed_alternative import PackedSpec, packed_spec
from sdpa_tui.core.padded_lengths import lengths_for_padding
from sdpa_tui.core.workload import Workload
from sdpa_tui.engine.costs.packed_cost import laid_out, passed_mask
from sdpa_tui.engine.measuring.sdpa_call import Inputs, kept_keys


@dataclass
class PaddedCall:
    padding: float
    lengths: tuple[int, ...]
    grad: bool
    spec: PackedSpec
    inputs: Inputs
    attn_mask: torch.Tensor

    @property
    def names(self) -> dict[str, object]:
        """What a packed code finds in scope."""
        return {"q": self.inputs.q, "k": self.inputs.k, "v": self.inputs.v, "attn_mask": self.attn_mask}

    def step(self, out: Callable[[], torch.Tensor]) -> Callable[[], object]:
        """One call of ``out``, with its backward under autograd."""
        i = self.inputs
        if not self.grad:
            return lambda: out()
        return lambda: torch.autograd.grad(out(), (i.q, i.k, i.v), i.grad_out)

    def sdpa_step(self) -> Callable[[], object]:
        """The call as the program makes it."""
        i = self.inputs
        return self.step(lambda: F.scaled_dot_product_attention(i.q, i.k, i.v, attn_mask=self.attn_mask))


def padded_calls(seq: int, paddings: str, layouts: str, device: torch.device) -> Iterator[PaddedCall]:
    """The call at each padding of ``paddings`` ("0.25,0.6"), forward then forward+backward."""
    for padding in (float(p) for p in paddings.split(",")):
        lengths = lengths_for_padding(8, seq, padding)
        for grad in (False, True):
            w = Workload(batch=8, heads=16, kv_heads=16, seq=seq, kv_seq=seq, head_dim=64, dtype="bf16",
                         mask="padding", direction="fwd+bwd" if grad else "fwd", lengths=tuple(lengths))
            sig = CallSignature((8, 16, seq, 64), (8, 16, seq, 64), "torch.bfloat16", "cuda:0", "bool",
                                (8, 1, seq, seq), grad=grad)
            spec = packed_spec(w, sig, CAUSAL_KEY_PADDING, tuple(lengths))
            inputs = Inputs.make(spec.workload, device)
            inputs.q, inputs.k, inputs.v = (laid_out(t, lay) for t, lay in zip((inputs.q, inputs.k, inputs.v),
                                                                               layouts.split(",")))
            attn_mask, _ = passed_mask(spec, kept_keys(spec.workload, device), inputs.q.dtype)
            yield PaddedCall(padding, lengths, grad, spec, inputs, attn_mask)
