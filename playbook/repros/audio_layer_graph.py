"""sglang-omni#1628: the Qwen3-Omni audio encoder's layer stack replayed as a CUDA graph per token bucket.

#1628 captures the 32 audio layers per token bucket (128 to 4096 tokens) and replays
them instead of launching about 460 kernels per forward; it also stops arming the
batch window for a lone request (`batch_wait_when_idle=False`). Measured here, on
transformers' Qwen3-Omni audio encoder (32 layers of 1280, random weights):

- eager against graph replay of the same layer stack at each bucket, rounded up to
  whole attention windows (104 tokens), and the capture cost (warm-up + capture);
- the conditional window: what a lone request waits before compute with the window
  armed on arrival (the old contract) against armed only once a second request joins,
  for windows of 5, 10 and 50 ms. That is arithmetic on the window, not a timing.

Ours, not upstream's code: upstream's AudioLayerGraphRunner (sglang-omni 0.1.9)
resolves its packed attention to sglang's VisionFlash3Attention on Hopper, whose kernel
comes from sglang-kernel's flash_ops.abi3.so (1.1 GB unpacked, a 373 MB wheel built
for torch 2.14.1), too large to carry to the device. Our stack runs each layer's
attention as one batched SDPA call over equal windows, as upstream's graph does with a
fixed max_seqlen.
"""
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as H  # noqa: E402
import _models as M  # noqa: E402

SUBJECT = "sglang-omni#1628"
TECHNIQUE = ("ours, following #1628's design: the audio encoder's 32-layer stack replayed from a CUDA graph per "
             "token bucket instead of eager launches (upstream's runner needs sglang-kernel's FA3, not carried)")
MODELLED = ("wait_armed_ms", "wait_conditional_ms")  # the lone-request window rows are arithmetic, not timings
BUCKETS = (128, 256, 512, 1024, 2048, 4096)


def main():
    args = H.parse_args(__doc__)
    dev, dt = H.device(), H.dtype()
    enc, cfg = M.audio_encoder(dev, dt, quick=args.quick)
    w = M.window_tokens(cfg) if not args.quick else 8
    cases = []
    if torch.cuda.is_available():
        for bucket in (BUCKETS if not args.quick else (16,)):
            n = math.ceil(bucket / w)
            x = torch.randn(n, w, cfg.d_model, device=dev, dtype=dt)
            static = x.clone()
            with torch.no_grad():
                eager = H.timeit(lambda: M.audio_layer_stack(enc, x), args.iters, args.warmup)
                holder = {}
                cap_ms = H.wall_ms(lambda: holder.update(g=M.capture(lambda s: M.audio_layer_stack(enc, s), static)))
                graph, out = holder["g"]
                replay = H.timeit(graph.replay, args.iters, args.warmup)
                graph.replay()
                err = H.max_abs_err(M.audio_layer_stack(enc, static), out)
            cases.append(H.case(f"layer stack, bucket {bucket}", {"bucket_tokens": bucket, "windows": n,
                                                                  "window_tokens": w, "layers": cfg.encoder_layers},
                                eager, replay, err=err, capture_ms=cap_ms))
            del graph, out
    for window in (5, 10, 50):
        cases.append(H.case(f"lone request's wait, window {window} ms", {"max_batch_wait_ms": window, "queued": 0},
                            None, None, wait_armed_ms=float(window), wait_conditional_ms=0.0,
                            modelled={"wait_armed_ms": "the whole window: armed on arrival, nothing else arrives",
                                      "wait_conditional_ms": "batch_wait_when_idle=False returns the lone request at once"}))
    H.summary(cases)
    H.emit(__file__, SUBJECT, TECHNIQUE, cases, args)


if __name__ == "__main__":
    main()
