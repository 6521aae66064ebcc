"""The header: what the engine runs on, and the workload."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from ...core.protocol.records import Environment
from ...core.workload import Workload
from ...exports.lab.report_tables import environment_line


class EnvironmentHeader(Static):
    _shown: tuple | None = None

    def show(self, env: Environment | None, workload: Workload, engine_state: str, paused: bool,
             disturbed: str = "") -> None:
        """``disturbed``: why the numbers read high now (the host's CPUs are contended), or ""."""
        key = (env, workload, engine_state, paused, disturbed)
        if key == self._shown:
            return
        self._shown = key
        text = Text()
        text.append("sdpa-tui ", style="bold")
        # States go first on the line: the lines are cut at the terminal's width, not wrapped.
        if paused:
            text.append("PAUSED", style="bold black on yellow")
            text.append(" ")
        if env is not None and env.is_cpu:  # first, with why: the environment line is cut at 80 columns
            text.append(cpu_mode_badge(env), style="bold black on yellow")
            text.append(" ")
        if disturbed:
            text.append(disturbed, style="bold black on yellow")
            text.append(" ")
        if env is None:
            text.append(engine_state or "engine starting (importing torch)…", style="yellow")
        else:
            if engine_state:
                text.append(engine_state, style="bold red")
                text.append(" · ")
            notes = env.dispatch_env.notes()  # a shadowing cuDNN, flags off at start, variables: before the versions
            if notes:
                text.append("; ".join(notes), style="bold yellow")
                text.append(" · ")
            text.append(environment_line(env))
        text.append("\nworkload ", style="bold")
        w = workload
        # K/V's heads and length only where they differ from Q's: at 80 columns the mask and direction stay on
        heads = f"{w.heads}" if w.kv_heads == w.heads else f"{w.heads}/{w.kv_heads} kv"
        length = f"{w.seq}" if w.kv_seq == w.seq else f"{w.seq}/{w.kv_seq} kv"
        text.append(f"batch {w.batch} · heads {heads} · len {length} · head dim {w.head_dim} · {w.dtype} · "
                    f"mask {w.mask} · {w.direction}")
        self.update(text, layout=False)


def cpu_mode_badge(env: Environment) -> str:
    """``CPU MODE (why)``, the why from the engine's note (no CUDA in this torch build, no GPU
    visible, or ``--device cpu``)."""
    prefix = "CPU mode: "
    why = next((note[len(prefix):] for note in env.notes if note.startswith(prefix)), "")
    return f"CPU MODE ({why})" if why else "CPU MODE"
