"""seed:qwen3-asr: where Qwen3-ASR's audio time goes, and what batching and true-length mel save.

Qwen3-ASR-1.7B's audio encoder (24 layers of 1024, 128 mel bins, windows of 100
frames) built from transformers' Qwen3-Omni audio encoder with those sizes, random
weights. Measured:

- the encoder per clip length, 5 to 120 s (100 mel frames a second);
- eight 10 s clips in one call against one call each;
- padding to 3000 mel frames (30 s) against the true length, as sglang-omni #833
  changed: the mel extraction (transformers' Whisper feature extractor, 128 bins,
  on the host) and the encoder, each padded and at true length;
- the extraction's share of extraction + encoder at true length.
"""
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as H  # noqa: E402
import _models as M  # noqa: E402

SUBJECT = "seed:qwen3-asr"
TECHNIQUE = "mel and encoder at the true clip length, and clips batched into one encoder call"


def host_ms(fn, iters):
    import time

    out = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e3)
    out.sort()
    return {"median": out[len(out) // 2], "p10": out[int(0.1 * (len(out) - 1))], "p90": out[int(0.9 * (len(out) - 1))]}


def main():
    args = H.parse_args(__doc__)
    dev, dt = H.device(), H.dtype()
    from transformers import WhisperFeatureExtractor

    fe = WhisperFeatureExtractor(feature_size=128, sampling_rate=16000)
    model, cfg = M.audio_encoder(dev, dt, asr=True, quick=args.quick)
    rng = np.random.default_rng(0)
    iters = max(3, args.iters // 3)
    cases = []
    lengths = [5, 10, 30, 60, 120] if not args.quick else [2, 5]
    with torch.no_grad():
        for sec in lengths:
            wav = rng.standard_normal(16000 * sec).astype(np.float32) * 0.1
            true = lambda: fe(wav, sampling_rate=16000, return_tensors="np", padding="longest", truncation=False)  # noqa: E731
            feats = true()["input_features"][0]
            mel = torch.from_numpy(feats).to(dev, dt)
            enc = H.timeit(lambda: M.encode_audio(model, [mel]), iters, args.warmup)
            ext = host_ms(true, iters)
            row = {"extract_ms": ext["median"], "encoder_ms": enc["median"],
                   "extract_share": ext["median"] / (ext["median"] + enc["median"])}
            if sec <= 30:
                padded = lambda: fe(wav, sampling_rate=16000, return_tensors="np", padding="max_length")  # noqa: E731
                pmel = torch.from_numpy(padded()["input_features"][0]).to(dev, dt)
                penc = H.timeit(lambda: M.encode_audio(model, [pmel]), iters, args.warmup)
                pext = host_ms(padded, iters)
                cases.append(H.case(f"{sec} s clip: padded to 3000 frames -> true length",
                                    {"seconds": sec, "mel_frames": int(mel.shape[1]), "padded_frames": int(pmel.shape[1])},
                                    {k: pext[k] + penc[k] for k in ("median", "p10", "p90")},
                                    {k: ext[k] + enc[k] for k in ("median", "p10", "p90")},
                                    padded_extract_ms=pext["median"], padded_encoder_ms=penc["median"], **row))
            else:
                cases.append(H.case(f"{sec} s clip", {"seconds": sec, "mel_frames": int(mel.shape[1])}, None, None, **row))
        mels = [torch.randn(cfg.num_mel_bins, 1000 if not args.quick else 200, device=dev, dtype=dt) for _ in range(8)]
        one_by_one = H.timeit(lambda: [M.encode_audio(model, [m]) for m in mels], iters, args.warmup)
        batched = H.timeit(lambda: M.encode_audio(model, mels), iters, args.warmup)
        err = H.max_abs_err(torch.cat([M.encode_audio(model, [m]) for m in mels]), M.encode_audio(model, mels))
        cases.append(H.case("8 x 10 s clips: one call each -> one call", {"clips": 8, "mel_frames_each": int(mels[0].shape[1]),
                                                                           "layers": cfg.encoder_layers, "d_model": cfg.d_model},
                            one_by_one, batched, err=err))
    H.summary(cases)
    H.emit(__file__, SUBJECT, TECHNIQUE, cases, args)


if __name__ == "__main__":
    main()
