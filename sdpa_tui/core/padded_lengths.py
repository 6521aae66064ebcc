"""The real lengths of a padded batch: one whole number per sequence, each at most the padded length.

``report --lengths 512,384,200`` gives them; ``report --padding 0.25`` draws them deterministically so that a quarter
of the batch's keys are padding (the first sequence as long as the padded length, the others spread evenly around
the mean that leaves); a watched call's are read from its key-padding mask on sampled calls and kept as histograms
(length → sequences). Pure: no torch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

MAX_PADDING = 0.95
"""A larger fraction leaves too few real keys to say anything about packing."""


def parse_lengths(text: str) -> tuple[int, ...]:
    """``"512,384,200"``: the lengths in the given order (one per batch element); ``ValueError`` says what is wrong."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("--lengths is empty: give one length per sequence (--lengths 512,384,200)")
    out = []
    for item in (part.strip() for part in text.split(",")):
        try:
            value = int(item.replace("_", ""))
        except ValueError:
            raise ValueError(f"--lengths {text!r}: {item!r} is not a whole number") from None
        if value < 1:
            raise ValueError(f"--lengths {text!r}: each length must be 1 or more, got {value:,}")
        out.append(value)
    return tuple(out)


def parse_padding(text: str) -> float:
    """``"0.25"``: the fraction of the batch's keys that are padding, from 0 to :data:`MAX_PADDING`."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise ValueError(f"--padding must be a fraction such as 0.25, got {text!r}") from None
    if not 0.0 <= value <= MAX_PADDING:  # nan too
        raise ValueError(f"--padding must be from 0 to {MAX_PADDING:g} (the share of the keys that are padding), "
                         f"got {text}")
    return value


def parse_paddings(text: str) -> tuple[float, ...]:
    """``"0,0.25,0.5"``: a sweep's padding fractions, in increasing order without repeats."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("--padding is empty: give fractions (--padding 0,0.25,0.5,0.75)")
    return tuple(sorted({parse_padding(item.strip()) for item in text.split(",")}))


def lengths_for_padding(batch: int, padded: int, padding: float) -> tuple[int, ...]:
    """``batch`` lengths of at most ``padded`` whose padding is ``padding`` of the batch's keys (to the nearest
    key): the first as long as ``padded`` (a padded batch is as long as its longest sequence) where there are
    others, which share what is left, spread evenly around their mean (at least 1 each). Deterministic."""
    real = round((1.0 - padding) * batch * padded)
    if batch == 1:
        return (max(1, real),)
    rest, others = real - padded, batch - 1
    if rest < others:  # so much padding that even the longest is shorter than the padded length
        return tuple([max(1, real // batch)] * batch)
    mean = rest / others
    half = 0.5 * min(mean - 1, padded - mean)  # half the spread that keeps every length within 1..padded
    if others == 1:
        lengths = [rest]
    else:
        lengths = [round(mean + half * (1 - 2 * i / (others - 1))) for i in range(others)]
        lengths[-1] += rest - sum(lengths)  # rounding: the total exact
    return (padded, *(min(padded, max(1, n)) for n in lengths))


def padding_of(lengths: Sequence[int], padded: int) -> float:
    """The share of a batch's keys that are padding."""
    return 1.0 - sum(lengths) / (len(lengths) * padded) if lengths and padded else 0.0


def histogram(lengths: Iterable[int]) -> dict[int, int]:
    """Length → how many sequences have it."""
    out: dict[int, int] = {}
    for n in lengths:
        out[int(n)] = out.get(int(n), 0) + 1
    return dict(sorted(out.items()))


def from_histogram(counts: Mapping[int, int]) -> tuple[int, ...]:
    """The lengths a histogram holds, the longest first (their order in the batch does not change the cost)."""
    return tuple(n for n, times in sorted(counts.items(), reverse=True) for _ in range(times))


def typical(histograms: Sequence[Mapping[int, int]], padded: int) -> Mapping[int, int] | None:
    """Of a signature's sampled batches, the one of median padding (the lab replays it), or None."""
    if not histograms:
        return None
    ranked = sorted(histograms, key=lambda h: padding_of(from_histogram(h), padded))
    return ranked[(len(ranked) - 1) // 2]


def describe(lengths: Sequence[int], padded: int, shown: int = 6) -> str:
    """``lengths 512,384,200 (padding 25%)``; a long batch's first ``shown`` and a count."""
    head = ",".join(str(n) for n in lengths[:shown]) + (f",… ({len(lengths)})" if len(lengths) > shown else "")
    return f"lengths {head} (padding {padding_of(lengths, padded):.0%})"
