"""The workload form (``w``) at 80x24, and the kv length following the query length there and with ``+``/``-``.

Driven with the Pilot as a user would: keys pressed, the screen read back; every wait has a deadline.
"""

from __future__ import annotations

from typing import Callable

import pytest
from support.ui_fakes import make_test_app, screen_text, settle, widget_text
from textual.geometry import Region
from textual.widgets import Button, Input, Label

from sdpa_tui.core.workload import Workload
from sdpa_tui.ui.screens.workload_form import WorkloadForm


async def until(pilot, condition: Callable[[], bool], what: str, timeout: float = 5.0) -> None:
    """Wait (at most ``timeout`` seconds) for ``condition``; fail saying ``what`` did not happen."""
    await settle(pilot, until=condition, timeout=timeout)
    assert condition(), f"within {timeout} s: {what}\n{screen_text(pilot.app)}"


async def open_form(pilot) -> WorkloadForm:
    await pilot.press("w")
    await until(pilot, lambda: isinstance(pilot.app.screen, WorkloadForm), "the form opens")
    return pilot.app.screen


async def type_into(pilot, form: WorkloadForm, field: str, text: str) -> None:
    """Focus ``field``, clear it and type ``text`` key by key (each key a Changed, as from a keyboard)."""
    box = form.query_one(f"#{field}", Input)
    box.focus()
    await pilot.press("end", *["backspace"] * len(box.value), *text)
    await until(pilot, lambda: box.value == text, f"{field} reads {text!r}")


def inside(region: Region, screen: Region) -> bool:
    return region.area > 0 and screen.contains_region(region)


@pytest.mark.parametrize("size", [(80, 24), (80, 16), (120, 40)])
async def test_the_form_and_its_buttons_fit_the_screen(size) -> None:
    app, _, _ = make_test_app()
    async with app.run_test(size=size) as pilot:
        form = await open_form(pilot)
        screen = form.region
        await until(pilot, lambda: form.query_one("#apply", Button).region.area > 0, "the buttons are laid out")
        for button in ("#apply", "#cancel"):
            region = form.query_one(button, Button).region
            assert inside(region, screen), f"{button} at {region} is off the {size} screen"
        assert inside(form.query_one("#workload-form").region, screen)
        assert inside(form.query_one("#form-error").region, screen), "the verdict line is on screen"
        text = screen_text(app)
        assert "Apply" in text and "Cancel" in text


async def test_at_80x24_every_field_is_on_screen_and_a_kv_heads_error_reads_in_one_piece() -> None:
    app, _, _ = make_test_app()
    async with app.run_test(size=(80, 24)) as pilot:
        form = await open_form(pilot)
        for name in ("batch", "heads", "kv_heads", "seq", "kv_seq", "head_dim", "dtype", "mask", "direction"):
            assert inside(form.query_one(f"#{name}").region, form.region), f"{name} is off screen"
        await type_into(pilot, form, "kv_heads", "3")
        await until(pilot, lambda: "must divide" in widget_text(app, "#form-error"), "the error is shown")
        error = [line.strip() for line in widget_text(app, "#form-error").splitlines() if line.strip()]
        assert error == ["✗ kv_heads (3) must divide heads (8) evenly: one of 1, 2, 4, 8"], error
        apply = form.query_one("#apply", Button)
        assert apply.disabled and inside(apply.region, form.region)


async def test_a_long_error_wraps_inside_the_form_with_the_buttons_still_on_screen() -> None:
    app, _, _ = make_test_app()
    async with app.run_test(size=(80, 24)) as pilot:
        form = await open_form(pilot)
        await type_into(pilot, form, "batch", "65536")
        await type_into(pilot, form, "seq", "65536")  # Q, K, V and the output past the 64 GiB limit
        await until(pilot, lambda: "GiB" in widget_text(app, "#form-error"), "the size error is shown")
        box = form.query_one("#form-error").region
        assert box.height >= 2 and form.query_one("#workload-form").region.contains_region(box)
        assert "the limit is 64 GiB" in " ".join(widget_text(app, "#form-error").split())
        assert inside(form.query_one("#apply", Button).region, form.region)


async def test_the_focused_field_is_marked_and_its_label_lit() -> None:
    app, _, _ = make_test_app()
    async with app.run_test(size=(80, 24)) as pilot:
        form = await open_form(pilot)
        await until(pilot, lambda: form.focused is form.query_one("#batch", Input), "the first field has focus")
        form.query_one("#seq", Input).focus()
        await until(pilot, lambda: form.focused is form.query_one("#seq", Input), "the query length has focus")
        fields = {field.query_one(Label).content: field for field in form.query(".form-field")}
        focused, other = fields["query length"], fields["batch"]
        assert focused.styles.border_left[0] not in ("", "none", "hidden", "blank")
        assert other.styles.border_left[0] in ("", "none", "hidden", "blank")
        assert focused.query_one(Label).styles.text_style.bold and not other.query_one(Label).styles.text_style.bold
        row = next(line for line in screen_text(app).splitlines() if "query length" in line)
        assert "▊query length" in row or "█query length" in row, row


async def test_the_kv_length_follows_the_query_length_in_the_form_and_then_with_plus() -> None:
    app, engine, _ = make_test_app()
    async with app.run_test(size=(80, 24)) as pilot:
        form = await open_form(pilot)
        await type_into(pilot, form, "seq", "1024")
        kv = form.query_one("#kv_seq", Input)
        await until(pilot, lambda: kv.value == "1024", "the kv length follows to 1024")
        assert "✓ [2, 8, 1024, 64] fp16" in widget_text(app, "#form-error")
        assert "kv len" not in widget_text(app, "#form-error")
        await pilot.press("enter")
        await until(pilot, lambda: not isinstance(app.screen, WorkloadForm), "the form closes")
        assert (engine.config.workload.seq, engine.config.workload.kv_seq) == (1024, 1024)
        await pilot.press("plus")
        await until(pilot, lambda: "len 2048 ·" in widget_text(app, "#header"), "+ doubles both")
        assert (engine.config.workload.seq, engine.config.workload.kv_seq) == (2048, 2048)


async def test_a_kv_length_set_apart_stays_in_the_form_and_with_plus_and_minus() -> None:
    app, engine, _ = make_test_app()
    async with app.run_test(size=(80, 24)) as pilot:
        form = await open_form(pilot)
        await type_into(pilot, form, "kv_seq", "256")
        await type_into(pilot, form, "seq", "1024")
        assert form.query_one("#kv_seq", Input).value == "256", "set apart on purpose: it stays"
        assert "kv len 256" in widget_text(app, "#form-error")
        await pilot.press("enter")
        await until(pilot, lambda: not isinstance(app.screen, WorkloadForm), "the form closes")
        assert (engine.config.workload.seq, engine.config.workload.kv_seq) == (1024, 256)
        await pilot.press("plus")
        await until(pilot, lambda: "len 2048/256 kv" in widget_text(app, "#header"), "+ leaves the kv length")
        await pilot.press("minus", "minus")
        await until(pilot, lambda: "len 512/256 kv" in widget_text(app, "#header"), "- leaves the kv length")
        assert (engine.config.workload.seq, engine.config.workload.kv_seq) == (512, 256)


async def test_an_empty_kv_length_is_the_query_length_and_a_workload_opened_apart_keeps_its_kv() -> None:
    app, engine, _ = make_test_app(workload=Workload(seq=512, kv_seq=128))
    async with app.run_test(size=(80, 24)) as pilot:
        form = await open_form(pilot)
        await type_into(pilot, form, "seq", "1024")
        assert form.query_one("#kv_seq", Input).value == "128", "opened apart: the kv length stays"
        await type_into(pilot, form, "kv_seq", "")
        await until(pilot, lambda: "✓ [2, 8, 1024, 64] fp16" in widget_text(app, "#form-error"), "empty kv: valid")
        await type_into(pilot, form, "seq", "2048")
        assert form.query_one("#kv_seq", Input).value == "2048", "emptied: it follows again"
        await pilot.press("enter")
        await until(pilot, lambda: not isinstance(app.screen, WorkloadForm), "the form closes")
        assert (engine.config.workload.seq, engine.config.workload.kv_seq) == (2048, 2048)
