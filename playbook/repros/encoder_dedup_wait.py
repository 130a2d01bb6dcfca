"""sglang-omni#1564: the audio encoder's in-batch dedup, and the micro-batch wait windows it exposes.

#1564 makes the encoders' batch window `SGLANG_OMNI_ENCODER_BATCH_WAIT_MS` (default 0,
was a hard-coded 50 ms) and, in the audio encoder, sends a clip whose cache key an
earlier request of the same batch holds to the encoder once: the duplicates take the
leader's result. Measured here, on transformers' Qwen3-Omni audio encoder (32 layers of
1280, random weights, 10 s clips):

- a batch of 8 requests, duplicate-heavy (2 distinct clips) and unique (8 distinct):
  one encoder call over every request's clip (before) against one call over the
  distinct clips only (after), both timed; the dedup's own host work (grouping by
  cache key) is in the after time;
- the windows upstream exposes (0, 5, 10, 50 ms) for a lone request: the window is
  waited out in full before compute, so its time to the encoder's output is the
  window plus one batch-1 call: the window is arithmetic (modelled), the call timed.
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as H  # noqa: E402
import _models as M  # noqa: E402

SUBJECT = "sglang-omni#1564"
TECHNIQUE = ("ours, following #1564: one audio-encoder call over a batch's distinct clips (duplicates share the "
             "leader's result) instead of every request's clip")
MODELLED = ("before_ms", "after_ms")  # the window rows add a fixed window to a timed call


def dedup_encode(model, clips, keys):
    """#1564's rule: the first request of each cache key leads, later ones wait for its result."""
    leaders, order = {}, []
    for i, key in enumerate(keys):
        if key not in leaders:
            leaders[key] = len(order)
            order.append(i)
    out = M.encode_audio(model, [clips[i] for i in order])
    per = out.shape[0] // len(order)
    rows = out.view(len(order), per, -1)
    return torch.stack([rows[leaders[k]] for k in keys])


def main():
    args = H.parse_args(__doc__)
    dev, dt = H.device(), H.dtype()
    model, cfg = M.audio_encoder(dev, dt, quick=args.quick)
    frames = 1000 if not args.quick else 200
    iters = max(5, args.iters // 2)
    cases = []
    with torch.no_grad():
        for name, distinct in (("duplicate-heavy", 2), ("unique", 8)):
            clips_d = [torch.randn(cfg.num_mel_bins, frames, device=dev, dtype=dt) for _ in range(distinct)]
            keys = [f"clip{i % distinct}" for i in range(8)]
            clips = [clips_d[i % distinct] for i in range(8)]
            full = lambda: M.encode_audio(model, clips)  # noqa: E731
            dedup = lambda: dedup_encode(model, clips, keys)  # noqa: E731
            before = H.timeit(full, iters, args.warmup)
            after = H.timeit(dedup, iters, args.warmup)
            per = full().view(8, -1, full().shape[-1])
            err = H.max_abs_err(per, dedup())
            cases.append(H.case(f"batch of 8, {name} ({distinct} distinct clips)",
                                {"requests": 8, "distinct_clips": distinct, "mel_frames": frames}, before, after,
                                peak_before=H.peak_mib(full), peak_after=H.peak_mib(dedup), err=err))
        one = H.timeit(lambda: M.encode_audio(model, [clips_d[0]]), iters, args.warmup)
    for window in (5, 10, 50):
        lone = lambda w: {k: w + one[k] for k in ("median", "p10", "p90")}  # noqa: E731
        cases.append(H.case(f"lone request: window {window} ms -> 0 ms", {"max_batch_wait_ms": [window, 0]},
                            lone(window), lone(0),
                            modelled={"before_ms": f"{window} ms window waited out + the timed batch-1 call",
                                      "after_ms": "0 ms window + the timed batch-1 call"},
                            batch1_encoder_ms=one["median"]))
    H.summary(cases)
    H.emit(__file__, SUBJECT, TECHNIQUE, cases, args)


if __name__ == "__main__":
    main()
