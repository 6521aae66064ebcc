"""The four SDPA backends, in the user's words and in torch's."""

from __future__ import annotations

from enum import Enum


class Backend(str, Enum):
    """An SDPA backend. The value is torch's ``SDPBackend`` member name."""

    CUDNN = "CUDNN_ATTENTION"
    FLASH = "FLASH_ATTENTION"
    EFFICIENT = "EFFICIENT_ATTENTION"
    MATH = "MATH"

    @property
    def short(self) -> str:
        """The name used on the command line (``--backends cudnn,flash``)."""
        return _SHORT[self]

    @property
    def label(self) -> str:
        """The name shown on screen."""
        return _LABEL[self]

    @classmethod
    def from_short(cls, name: str) -> "Backend":
        key = name.strip().lower()
        for backend, short in _SHORT.items():
            if key in (short, backend.value.lower()):
                return backend
        allowed = ", ".join(_SHORT.values())
        raise ValueError(f"unknown backend {name!r}; allowed: {allowed}")


_SHORT = {
    Backend.CUDNN: "cudnn",
    Backend.FLASH: "flash",
    Backend.EFFICIENT: "efficient",
    Backend.MATH: "math",
}
_LABEL = {
    Backend.CUDNN: "cuDNN",
    Backend.FLASH: "Flash",
    Backend.EFFICIENT: "Mem-efficient",
    Backend.MATH: "Math",
}

#: Display order, as in the lab and the README.
ALL_BACKENDS: tuple[Backend, ...] = (Backend.CUDNN, Backend.FLASH, Backend.EFFICIENT, Backend.MATH)

#: ``torch._fused_sdp_choice`` returns these integers (torch's SDPBackend enum values).
CHOICE_CODES: dict[int, Backend] = {
    0: Backend.MATH,
    1: Backend.FLASH,
    2: Backend.EFFICIENT,
    3: Backend.CUDNN,
}


def parse_backend_list(text: str) -> tuple[Backend, ...]:
    """Parse ``"cudnn,flash"`` into backends, keeping display order, rejecting unknown names."""
    names = [part for part in text.split(",") if part.strip()]
    if not names:
        raise ValueError("no backend named; allowed: cudnn, flash, efficient, math")
    chosen = {Backend.from_short(name) for name in names}
    return tuple(b for b in ALL_BACKENDS if b in chosen)


def parse_priority(text: str) -> tuple[Backend, ...]:
    """Parse ``"flash,cudnn"`` into backends in the order given (a dispatch priority)."""
    order: list[Backend] = []
    for name in (part for part in text.split(",") if part.strip()):
        backend = Backend.from_short(name)
        if backend in order:
            raise ValueError(f"{backend.short} appears twice in the priority list")
        order.append(backend)
    if not order:
        raise ValueError("an empty priority list; name backends: cudnn, flash, efficient, math")
    return tuple(order)
