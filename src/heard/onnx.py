"""The one way heard opens an ONNX model: an ONNX Runtime session on the CPU.

The diarizer's segmentation model, the CAM++ speaker embedder and the dense scout's MiniLM
all run through ``onnx_session``, so they are set up alike and fail alike when onnxruntime
or the model file is missing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from heard.errors import MissingDependencyError

__all__ = ["onnx_session"]

REINSTALL = "which comes with heard: reinstall heard"


def onnx_session(
    path: str | Path,
    threads: int,
    *,
    what: str,
    model: str = "model",
    needs: str = REINSTALL,
    spin: bool = True,
) -> Any:
    """An ``onnxruntime.InferenceSession`` of the model file at ``path``, on the CPU, with
    ``threads`` threads inside each operator and one between them (heard runs each graph's
    operators in order), and only errors logged. ``spin=False``: a thread with nothing to do
    sleeps rather than spins for its next operator. For batch work (diarization) on 2 cores
    that took a third less CPU and less wall time too, same output (issue 72: 242 and 173 CPU
    s per hour of calls).

    ``MissingDependencyError`` when the file is missing ("the <model> <path> is missing") or
    onnxruntime is not installed ("<what> needs onnxruntime, <needs>").
    """
    path = Path(path)
    if not path.is_file():
        raise MissingDependencyError(f"the {model} {path} is missing")
    try:
        import onnxruntime
    except ImportError as e:
        raise MissingDependencyError(f"{what} needs onnxruntime, {needs}") from e
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    if not spin:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(
        str(path), sess_options=options, providers=["CPUExecutionProvider"]
    )
