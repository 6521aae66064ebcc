"""The header's host-contention badge, from Linux's CPU pressure file."""

from __future__ import annotations

from sdpa_tui.telemetry.host_cpu import DISTURBED_AT_PERCENT, cpu_pressure, disturbance_note

PSI = "some avg10=64.07 avg60=60.51 avg300=57.69 total=618564916\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"


def test_pressure_is_the_some_line_s_ten_second_average(tmp_path):
    path = tmp_path / "cpu"
    path.write_text(PSI)
    assert cpu_pressure(str(path)) == 64.07


def test_no_pressure_file_or_a_garbled_one_says_nothing(tmp_path):
    assert cpu_pressure(str(tmp_path / "missing")) is None
    garbled = tmp_path / "garbled"
    garbled.write_text("some avg10=lots\n")
    assert cpu_pressure(str(garbled)) is None
    assert disturbance_note(None) == ""


def test_the_badge_appears_from_the_threshold_with_the_share():
    assert disturbance_note(DISTURBED_AT_PERCENT - 0.1) == ""
    assert disturbance_note(64.07) == "CPU CONTENDED 64%: times read high"
    assert disturbance_note(64.07, on_cpu=False) == "CPU CONTENDED 64%: eager times read high"  # GPU clocks are not
