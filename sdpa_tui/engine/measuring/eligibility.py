"""What SDPA would pick, and why a backend is not eligible, in torch's own words."""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass

import torch
from torch.nn.attention import sdpa_kernel

from ...core.backends import ALL_BACKENDS, CHOICE_CODES, Backend
from ...core.status import Status
from .sdpa_call import Inputs, forced, sdp_backend

_TRIGGERED = re.compile(r"\s*\(Triggered internally at [^)]*\)\.?\s*$", re.S)
_HEADER = re.compile(r"kernel not used because:?\s*$", re.I)
_NO_KERNEL = ("No available kernel", "No viable backend")
_OOM_SIZE = re.compile(r"Tried to allocate ([\d.]+ [KMGT]?i?B)")


@dataclass(frozen=True)
class Eligibility:
    status: Status  # OK, NOT_ELIGIBLE, OOM or ERROR
    reason: str = ""
    details: tuple[str, ...] = ()


def clean_message(text: str) -> str:
    return _TRIGGERED.sub("", str(text)).strip()


_SECTION_OWNER = (("memory efficient", Backend.EFFICIENT), ("flash", Backend.FLASH), ("cudnn", Backend.CUDNN))


def reasons_for(backend: Backend, messages: list[str]) -> list[str]:
    """Torch's reasons that concern ``backend``.

    Forcing one backend, torch still walks its priority list and warns for every backend:
    "Flash attention kernel not used because:" then the reasons, one warning each; the
    others say only "... has been runtime disabled". Keep the section of ``backend``.
    """
    owner: Backend | None = None
    own: list[str] = []
    for line in messages:
        if _HEADER.search(line):
            head = line.lower()
            owner = next((b for prefix, b in _SECTION_OWNER if head.startswith(prefix)), None)
        elif owner == backend and not line.startswith(_NO_KERNEL):
            own.append(line)
    return own


def probe(inputs: Inputs, backend: Backend, device: torch.device) -> Eligibility:
    """Run one call with only ``backend`` allowed; classify what happened."""
    step = inputs.step()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with forced((backend,)):
                result = step()
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
            del result
            return Eligibility(Status.OK)
        except torch.OutOfMemoryError as exc:
            return oom(exc)
        except RuntimeError as exc:
            message = clean_message(str(exc))
            warned = [m for m in (clean_message(str(w.message)) for w in caught) if m]
            details = list(dict.fromkeys(reasons_for(backend, warned)))  # de-duplicated, in order
            if any(marker in message for marker in _NO_KERNEL):
                if not details and device.type == "cpu":
                    # torch's own words here blame the flags ("turning off both the math kernel and the fused
                    # kernels") with every flag on: what is true is that the backend has no CPU kernel at all
                    no_cpu = f"{backend.label} has no CPU implementation (on the CPU, SDPA has a flash kernel and MATH)"
                    return Eligibility(Status.NOT_ELIGIBLE, no_cpu, (no_cpu,))
                reason = details[0] if details else message.splitlines()[0]
                return Eligibility(Status.NOT_ELIGIBLE, reason, tuple(details + [message]))
            return Eligibility(Status.ERROR, message.splitlines()[0], tuple(details + [message]))


def oom(exc: BaseException) -> Eligibility:
    text = clean_message(str(exc))
    size = _OOM_SIZE.search(text)
    reason = f"needed {size.group(1)} more" if size else "torch could not allocate memory"
    return Eligibility(Status.OOM, reason, (text,))


def priority_order() -> tuple[str, ...]:
    """The order SDPA tries backends in (private API: empty where torch lacks it)."""
    getter = getattr(torch._C, "_get_sdp_priority_order", None)
    if getter is None:
        return ()
    try:
        return tuple(CHOICE_CODES[int(code)].value for code in getter() if int(code) in CHOICE_CODES)
    except Exception:  # noqa: BLE001 - private API of varying shape
        return ()


LEGACY_NOTE = (
    "legacy API: torch.backends.cuda.sdp_kernel(enable_flash, enable_math, enable_mem_efficient) "
    "never touches the cuDNN flag, so cuDNN stays enabled"
)


def flag_context(enabled: tuple[Backend, ...], legacy: bool = False, priority: tuple[Backend, ...] = ()):
    """The flags as a user would set them: ``sdpa_kernel``, the legacy ``sdp_kernel``, or a custom order."""
    if legacy:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # sdp_kernel is deprecated: that is the point
            return torch.backends.cuda.sdp_kernel(
                enable_flash=Backend.FLASH in enabled,
                enable_math=Backend.MATH in enabled,
                enable_mem_efficient=Backend.EFFICIENT in enabled,
            )
    if priority:
        ordered = [b for b in priority if b in enabled] + [b for b in enabled if b not in priority]
        return sdpa_kernel([sdp_backend(b) for b in ordered], set_priority=True)
    return forced(enabled)


def effective_flags() -> tuple[Backend, ...]:
    """The backend flags torch sees as on right now."""
    cuda = torch.backends.cuda
    on = {
        Backend.CUDNN: cuda.cudnn_sdp_enabled(),
        Backend.FLASH: cuda.flash_sdp_enabled(),
        Backend.EFFICIENT: cuda.mem_efficient_sdp_enabled(),
        Backend.MATH: cuda.math_sdp_enabled(),
    }
    return tuple(b for b in ALL_BACKENDS if on[b])


@dataclass(frozen=True)
class Choice:
    backend: Backend | None
    reason: str
    effective: tuple[Backend, ...]
    priority_order: tuple[str, ...]


def choose(inputs: Inputs, enabled: tuple[Backend, ...], legacy: bool = False,
           priority: tuple[Backend, ...] = ()) -> Choice:
    """The backend SDPA picks with these flags set the way the user sets them, or None and why."""
    if not enabled and not legacy:
        return Choice(None, "every backend flag is off", (), priority_order())
    chooser = getattr(torch, "_fused_sdp_choice", None)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        if chooser is not None and priority:
            # Torch sets its default priority order lazily, on the first choice in the process,
            # overwriting one set before it: make that first choice happen outside our order.
            try:
                chooser(inputs.q, inputs.k, inputs.v, **inputs.sdpa_kwargs())
            except RuntimeError:
                pass
        with flag_context(enabled, legacy, priority):
            effective, order = effective_flags(), priority_order()
            if chooser is None:
                return Choice(None, "this torch has no torch._fused_sdp_choice to ask", effective, order)
            try:
                code = int(chooser(inputs.q, inputs.k, inputs.v, **inputs.sdpa_kwargs()))
            except RuntimeError as exc:
                return Choice(None, clean_message(str(exc)).splitlines()[0], effective, order)
            order = priority_order()  # set lazily by the first choice
    backend = CHOICE_CODES.get(code)
    if backend is None:
        return Choice(None, f"torch chose backend code {code}, which sdpa-tui does not know", effective, order)
    return Choice(backend, "", effective, order)
