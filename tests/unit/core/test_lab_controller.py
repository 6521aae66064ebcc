"""The lab's controller without a screen: each key's change, its words and the configuration the engine gets."""

from __future__ import annotations

from sdpa_tui.core.backends import ALL_BACKENDS, Backend
from sdpa_tui.core.lab.lab_controller import LabController
from sdpa_tui.core.lab.session import Session
from sdpa_tui.core.protocol.records import Dispatch
from sdpa_tui.core.workload import Workload


def controller(**kw) -> LabController:
    return LabController(Session(Workload(), ALL_BACKENDS), **kw)


def test_a_flag_off_leaves_the_engines_flags_and_the_shown_backends_without_it():
    lab = controller()
    change = lab.toggle(Backend.FLASH)
    assert change.message == "Flash flag off" and not change.error
    assert Backend.FLASH not in change.configure.enabled and Backend.FLASH not in lab.session.enabled
    again = lab.toggle(Backend.FLASH)
    assert again.message == "Flash flag on" and Backend.FLASH in again.configure.enabled
    assert again.configure.config_id > change.configure.config_id, "records of the old configuration are ignored"


def test_legacy_mode_has_no_cudnn_switch_and_no_priority():
    lab = controller(priority=(Backend.MATH, Backend.FLASH))
    change = lab.toggle_legacy()
    assert change.configure.legacy_api and Backend.CUDNN not in change.configure.enabled
    assert change.configure.priority == (), "sdp_kernel(...) has no order"
    assert Backend.CUDNN in lab.session.enabled, "its panel still shows what torch does with it"
    refused = lab.toggle(Backend.CUDNN)
    assert refused.error and refused.configure is None and "no cuDNN switch" in refused.message
    assert lab.rotate_priority().error


def test_the_priority_rotates_from_the_order_in_force():
    lab = controller()
    lab.session.apply(Dispatch(lab.session.config_id, Backend.CUDNN,
                               ("CUDNN_ATTENTION", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH")))
    change = lab.rotate_priority()
    assert change.configure.priority == (Backend.FLASH, Backend.EFFICIENT, Backend.MATH, Backend.CUDNN)
    assert change.message.startswith("priority: Flash > Mem-efficient > Math > cuDNN")


def test_workload_keys_change_the_workload_or_say_why_not():
    lab = controller()
    change = lab.scale_seq(2)
    assert lab.session.workload.seq == 1024 and change.configure.workload.seq == 1024
    assert lab.set_workload(lab.session.workload) is None, "the same workload: nothing to measure anew"
    refused = lab.edit(seq=0)
    assert refused.error and refused.configure is None and refused.message.startswith("not changed:")
    assert lab.cycle_dtype().configure.workload.dtype == "bf16"
    assert lab.toggle_causal().configure.workload.causal
    assert lab.toggle_direction().configure.workload.backward


def test_pause_and_the_engine_memory_allowance():
    lab = controller(recycle_growth_mib=256.0)
    assert lab.toggle_pause() is True and lab.paused
    assert lab.toggle_pause() is False
    assert lab.configure_record().recycle_growth_mib == 256.0


def test_each_gpu_keeps_its_session_and_follows_the_shown_ones_workload():
    lab = controller()
    first = lab.session
    lab.toggle(Backend.MATH)
    lab.move(1, previous=0)
    assert lab.sessions_by_gpu[0] is first and lab.session is not first
    assert lab.session.enabled == first.enabled and lab.session.config_id >= first.config_id
    lab.scale_seq(2)
    lab.move(0, previous=1)
    assert lab.session is first and first.workload.seq == 1024, "the kept session takes the current workload"
    other = lab.session_of(3)
    assert other.workload == first.workload and other.config_id == first.config_id
    lab.show(3, shown=0)
    assert lab.session is other and lab.sessions_by_gpu[0] is first
