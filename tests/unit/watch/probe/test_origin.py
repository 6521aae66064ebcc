"""Where watch names a call's site: the first frame of the program, past torch's, sdpa-tui's and the model
libraries' (``watch/probe/explain/origin.py``)."""

from __future__ import annotations

import os

import pytest

from sdpa_tui.watch.probe.explain import origin


@pytest.fixture
def site_packages(tmp_path, monkeypatch):
    folder = os.path.join(str(tmp_path / "site-packages"), "")
    monkeypatch.setattr(origin, "_SITE_DIRS", (folder,))
    return folder


def test_hugging_faces_kernels_wrapper_is_a_library_where_it_is_installed_and_a_programs_kernels_folder_is_not(
        site_packages, tmp_path):
    """transformers 5.25 runs every model's forward through ``kernels``' layer wrapper: its frame is passed over
    (the site is the program's line that called the model), where a program's own ``kernels/`` folder is the
    program's."""
    assert origin.is_library(site_packages + "kernels/_internals/layer/layer.py")
    assert origin.installed_package(site_packages + "kernels/_internals/layer/layer.py") == "kernels"
    assert not origin.is_library(str(tmp_path / "project" / "kernels" / "attention.py"))
    assert not origin.is_library(site_packages + "my_model/kernels/attention.py"), "a package's own kernels/ folder"
    assert origin.is_library(str(tmp_path / "src" / "transformers" / "models" / "llama.py")), "named anywhere"


def test_the_site_is_the_first_frame_of_the_program(site_packages, monkeypatch):
    """A stack of the program's line, transformers', kernels' wrapper and torch's: the program's line is named."""
    class Code:
        def __init__(self, filename):
            self.co_filename = filename

    class Frame:
        def __init__(self, filename, line, back):
            self.f_code, self.f_lineno, self.f_back = Code(filename), line, back

    monkeypatch.setattr(origin, "_PROGRAM_FILES", {})
    program = Frame(os.path.abspath("train.py"), 22, None)
    model = Frame(site_packages + "transformers/models/llama/modeling_llama.py", 300, program)
    wrapper = Frame(site_packages + "kernels/_internals/layer/layer.py", 616, model)
    attention = Frame(site_packages + "transformers/integrations/sdpa_attention.py", 90, wrapper)
    assert origin.call_site(attention) == "train.py:22"
