"""``sdpa-tui compare`` run in the test's process, and the real reports it compares."""

from __future__ import annotations

from sdpa_tui.cli import main
from support.paths import REPORTS

H100 = REPORTS / "h100-torch2.11"
H200 = REPORTS / "h200-torch2.11"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["compare", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err
