"""The one ONNX Runtime session set-up (``heard.onnx``): its options, and what it says when
the model file or onnxruntime is missing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from heard.diarize.embedders import CAMPLUSPLUS
from heard.errors import MissingDependencyError
from heard.onnx import onnx_session


def test_a_session_runs_on_the_cpu_with_the_threads_asked_for() -> None:
    session = onnx_session(CAMPLUSPLUS, 2, what="diarization")
    options = session.get_session_options()
    assert options.intra_op_num_threads == 2
    assert options.inter_op_num_threads == 1
    assert options.log_severity_level == 3
    assert session.get_providers() == ["CPUExecutionProvider"]


def test_a_missing_model_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "gone.onnx"
    with pytest.raises(
        MissingDependencyError, match=f"^the speaker embedder {missing} is missing$"
    ):
        onnx_session(missing, 1, what="diarization", model="speaker embedder")


def test_without_onnxruntime_the_message_says_what_needs_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import fails
    with pytest.raises(MissingDependencyError) as caught:
        onnx_session(CAMPLUSPLUS, 1, what="diarization")
    assert (
        str(caught.value)
        == "diarization needs onnxruntime, which comes with heard: reinstall heard"
    )
    assert isinstance(caught.value, ImportError)
