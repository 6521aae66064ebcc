"""What a call's attention mask is, read once at a signature's first call (``watch/probe/explain/choice.mask_form``): the forms an
alternative can express with a ``mask_mod`` of its own (FlexAttention), and ``other`` for any mask it cannot."""

from __future__ import annotations

NONE = "none"
CAUSAL = "causal"  # is_causal=True, or a mask equal to it
KEY_PADDING = "key_padding"  # every query row keeps the same keys: a [batch, kv_len] key-padding mask, broadcast
CAUSAL_KEY_PADDING = "causal_key_padding"  # causal and key padding together (transformers' mask with padding)
OTHER = "other"  # anything else: per-head masks, sliding windows, additive biases (ALiBi), causal beside a mask
FORMS = (NONE, CAUSAL, KEY_PADDING, CAUSAL_KEY_PADDING, OTHER)
