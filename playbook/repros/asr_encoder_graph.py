"""sglang-omni#1633: Qwen3-ASR's audio encoder layer stack (24 layers + ln_post/proj) replayed as CUDA graphs.

#1633 captures the 24 encoder layers plus ln_post, proj1, act and proj2 on packed
tokens, one graph per bucket: powers of two from 128 up to max_batch x max tokens per
clip (8 x 780 = 6240 with its defaults), the conv front end staying eager. Measured
here, on Qwen3-ASR-1.7B's encoder sizes (transformers' Qwen3-Omni audio encoder with
24 layers of 1024, random weights):

- eager against graph replay of that stack at each bucket (rounded up to whole
  104-token attention windows), and the capture cost;
- the whole encoder call as the eager path runs it today (conv front end + stock
  layers) for one 10 s clip and for eight, beside them, for scale.

Ours, not upstream's code: upstream's Qwen3ASREncoderLayerStackGraphRunner (0.1.9)
imports sglang.srt.layers.attention.vision, whose Hopper attention is sglang-kernel's
FA3 (flash_ops.abi3.so, 1.1 GB unpacked), too large to carry to the device.
"""
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as H  # noqa: E402
import _models as M  # noqa: E402

SUBJECT = "sglang-omni#1633"
TECHNIQUE = ("ours, following #1633's design: Qwen3-ASR's encoder layer stack and projection replayed from a CUDA "
             "graph per token bucket instead of eager launches (upstream's runner needs sglang-kernel's FA3, not carried)")


def buckets(max_batch=8, max_tokens_per_clip=780):
    """#1633's bucket rule: powers of two from 128 below the ceiling, then the ceiling."""
    ceiling, out, step = max_batch * max_tokens_per_clip, [], 128
    while step < ceiling:
        out.append(step)
        step *= 2
    return out + [ceiling]


def main():
    args = H.parse_args(__doc__)
    dev, dt = H.device(), H.dtype()
    enc, cfg = M.audio_encoder(dev, dt, asr=True, quick=args.quick)
    w = M.window_tokens(cfg) if not args.quick else 8
    cases = []
    if torch.cuda.is_available():
        for bucket in (buckets() if not args.quick else (16,)):
            n = math.ceil(bucket / w)
            x = torch.randn(n, w, cfg.d_model, device=dev, dtype=dt)
            static = x.clone()
            fn = lambda s: M.audio_layer_stack(enc, s, head=True)  # noqa: E731
            with torch.no_grad():
                eager = H.timeit(lambda: fn(x), args.iters, args.warmup)
                holder = {}
                cap_ms = H.wall_ms(lambda: holder.update(g=M.capture(fn, static)))
                graph, out = holder["g"]
                replay = H.timeit(graph.replay, args.iters, args.warmup)
                graph.replay()
                err = H.max_abs_err(fn(static), out)
            cases.append(H.case(f"encoder stack, bucket {bucket}", {"bucket_tokens": bucket, "windows": n,
                                                                    "window_tokens": w, "layers": cfg.encoder_layers},
                                eager, replay, err=err, capture_ms=cap_ms))
            del graph, out
        with torch.no_grad():
            for clips in (1, 8):
                mels = [torch.randn(cfg.num_mel_bins, 1000, device=dev, dtype=dt) for _ in range(clips)]
                t = H.timeit(lambda: M.encode_audio(enc, mels), max(3, args.iters // 3), args.warmup)
                cases.append(H.case(f"stock encoder call, {clips} x 10 s", {"clips": clips, "mel_frames_each": 1000},
                                    None, None, encoder_ms=t["median"], encoder_spread_ms=[t["p10"], t["p90"]]))
    H.summary(cases)
    H.emit(__file__, SUBJECT, TECHNIQUE, cases, args)


if __name__ == "__main__":
    main()
