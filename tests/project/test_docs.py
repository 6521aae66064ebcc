"""The documentation: the site builds with ``mkdocs build --strict`` (no broken link or anchor, no page left out of
the nav), and every guide page's CPU examples run as printed.

A runnable example is a ```bash block right below an HTML comment (invisible on the site and on GitHub)::

    <!-- cpu-example exit=2 expect="must divide heads" in-clone -->

``exit=`` the exit codes the block may end with (default 0), ``expect=`` a text its output holds, ``in-clone`` to
run it from the repository's root (it reads the clone's files; it must not write there). The others run in a fresh
folder, one per page, in the page's order: a later block may read what an earlier one wrote. ``sdpa-tui`` and
``python3`` on the block's PATH are this checkout's, through the script pip writes for the command.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.paths import REPO

GUIDE = REPO / "docs" / "guide"
COMMAND_PAGES = ("live-monitor", "report", "sweep", "watch", "compare", "serve", "exporter")
"""A page per command of ``sdpa-tui --help``; each shows at least one example that runs on the CPU."""

MARKER = "<!-- cpu-example"
EXAMPLE = re.compile(r"^<!-- cpu-example(?P<options>[^\n]*?)-->\n```bash\n(?P<script>.*?)\n```$", re.S | re.M)
EXAMPLE_TIMEOUT_S = 300  # a report or a sweep on a loaded 2-core machine, with the engine's start
LEFTOVER_GRACE_S = 15


@dataclass(frozen=True)
class CpuExample:
    page: str
    line: int
    script: str
    exits: tuple[int, ...] = (0,)
    expect: str | None = None
    in_clone: bool = False


def examples_of(page: Path) -> list[CpuExample]:
    text = page.read_text()
    found = []
    for match in EXAMPLE.finditer(text):
        options: dict[str, str] = {}
        for token in shlex.split(match["options"]):
            key, _, value = token.partition("=")
            options[key] = value
        unknown = set(options) - {"exit", "expect", "in-clone"}
        assert not unknown, f"{page.name}: unknown cpu-example option(s) {sorted(unknown)}"
        exits = tuple(int(code) for code in options["exit"].split(",")) if "exit" in options else (0,)
        found.append(CpuExample(page.name, text.count("\n", 0, match.start()) + 1, match["script"], exits,
                                options.get("expect"), "in-clone" in options))
    assert len(found) == text.count(MARKER), (
        f"{page.name}: a '{MARKER}' comment is not directly followed by a ```bash block")
    return found


def guide_pages() -> list[Path]:
    return sorted(GUIDE.glob("*.md"))


def test_every_command_has_a_guide_page_with_a_cpu_example() -> None:
    for name in COMMAND_PAGES:
        page = GUIDE / f"{name}.md"
        assert page.exists(), f"no guide page for {name}"
        assert examples_of(page), f"{page.name} has no example marked '{MARKER} -->'"


def test_the_readme_test_command_is_what_ci_runs() -> None:
    command = "python3 -m pip install -e '.[test]' && python3 -m pytest -q"
    assert command in (REPO / "README.md").read_text()
    assert command in (REPO / ".ci" / "run").read_text()


RELATIVE_LINK = re.compile(r"\]\((?!https?://|#)([^)\s#]+)(?:#([^)\s]*))?\)")
HEADING = re.compile(r"^#{1,6} (.+)$", re.M)


def anchors_of(page: Path) -> set[str]:
    """The anchors of a page's headings, as GitHub and the site (mkdocs.yml's slugify) make them."""
    from pymdownx.slugs import slugify

    slug = slugify(case="lower")
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.S | re.M)  # a '# ' line in a code block
    return {slug(heading.replace("`", "").replace("**", ""), "-") for heading in HEADING.findall(text)}


@pytest.mark.parametrize("document", ["README.md", "CHANGELOG.md"])
def test_the_links_outside_the_site_point_at_files_and_headings_of_the_repository(document: str) -> None:
    """The site's pages are checked by the strict build; these two are read on GitHub, outside it."""
    links = RELATIVE_LINK.findall((REPO / document).read_text())
    assert links, f"{document} links no file"
    missing = [target for target, _ in links if not (REPO / target).exists()]
    assert not missing, f"{document} links files that are not there: {missing}"
    if importlib.util.find_spec("pymdownx") is None:
        return  # the anchors are checked where the test extra (mkdocs-material) is installed
    broken = [f"{target}#{anchor}" for target, anchor in links
              if anchor and anchor not in anchors_of(REPO / target)]
    assert not broken, f"{document} links headings that are not there: {broken}"


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None,
                    reason="mkdocs is not installed (the test extra brings it: pip install -e '.[test]')")
def test_the_site_builds_strict(tmp_path: Path) -> None:
    site = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                           str(REPO / "mkdocs.yml"), "--site-dir", str(site)],
                          capture_output=True, text=True, timeout=300, cwd=REPO,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode == 0, proc.stderr[-4000:]
    for name in (*COMMAND_PAGES, "clocks", "troubleshooting"):
        assert (site / "guide" / name / "index.html").exists(), f"guide/{name}.md is not on the site"


def command_shims(bin_dir: Path) -> None:
    """``sdpa-tui`` as pip writes it (benchmarks/monitor/console_script.py, line for line) and ``python3``, both running
    this interpreter; with PYTHONPATH at the checkout they import its code, in every process they start."""
    bin_dir.mkdir()
    script = bin_dir / "sdpa-tui"
    script.write_text(f"#!{sys.executable}\n" + (REPO / "benchmarks" / "monitor" / "console_script.py").read_text())
    python = bin_dir / "python3"
    python.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
    for path in (script, python):
        path.chmod(0o755)


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def run_example(example: CpuExample, work: Path, env: dict[str, str]) -> tuple[int, str, bool]:
    """Run the block in a process group of its own; return its exit code, its output, and whether it left a
    process running (a server it started and did not stop). Whatever is left is stopped."""
    log = work.parent / f"{example.page}-{example.line}.log"
    with log.open("w") as out:
        proc = subprocess.Popen(["bash", "-e", "-o", "pipefail", "-c", example.script],
                                cwd=REPO if example.in_clone else work, env=env, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            code = proc.wait(timeout=EXAMPLE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            pytest.fail(f"{example.page}:{example.line} ran past {EXAMPLE_TIMEOUT_S} s:\n{log.read_text()[-3000:]}")
    deadline = time.monotonic() + LEFTOVER_GRACE_S
    while group_alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = group_alive(proc.pid)
    if left:
        os.killpg(proc.pid, signal.SIGKILL)
    return code, log.read_text(), left


@pytest.mark.parametrize("page", [p.name for p in guide_pages() if MARKER in p.read_text()])
def test_the_guide_examples_run_as_printed_on_the_cpu(page: str, tmp_path: Path) -> None:
    command_shims(tmp_path / "bin")
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ,
           "PATH": os.pathsep.join([str(tmp_path / "bin"), os.environ.get("PATH", "")]),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
           "COLUMNS": "120"}
    for example in examples_of(GUIDE / page):
        code, output, left = run_example(example, work, env)
        where = f"{page}:{example.line}"
        assert code in example.exits, f"{where} exited {code}, expected {example.exits}:\n{output[-4000:]}"
        assert "Traceback" not in output, f"{where} printed a traceback:\n{output[-4000:]}"
        if example.expect is not None:
            assert example.expect in output, f"{where}: {example.expect!r} not in its output:\n{output[-4000:]}"
        assert not left, f"{where} left a process running (stopped now):\n{output[-2000:]}"
