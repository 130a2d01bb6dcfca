"""seed:code2wav-cuda-graphs: captured Code2Wav decode per (batch, frames) shape, and bucket hit rates.

sglang-omni #1101 (open) replays CUDA graphs for Code2Wav at exact captured shapes
(batch 1, frames 10/20/30/35) and falls back to eager otherwise. This measures on
Qwen3-Omni's Code2Wav (transformers, random weights, full size):

- eager against graph replay per (batch, frames) shape, and the equivalence error;
- the capture cost of each shape (warm-up + capture, host-timed);
- the hit rate of a bucket set over a synthetic shape trace: streams of seeded
  lengths chunked as the scheduler chunks them (uniform 10-frame chunks with 25
  frames of left context, or a 4-frame first chunk then 25-frame chunks), batched
  by a seeded concurrency, with per-shape hit and fallback counts: what per-shape
  hit tracing would report.
"""
import random
import sys
from collections import Counter
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as H  # noqa: E402
import _models as M  # noqa: E402

SUBJECT = "seed:code2wav-cuda-graphs"
TECHNIQUE = "replay a captured CUDA graph of the vocoder decode instead of eager launches"


def trace(first, steady, ctx, streams=400, concurrency=8, seed=0):
    """(batch, frames incl. context) of every decode call over a synthetic workload."""
    rng = random.Random(seed)
    shapes = []
    for _ in range(streams):
        total = max(8, int(rng.lognormvariate(4.8, 0.6)))  # frames: ~10 s median at 12.5 Hz
        start = 0
        while start < total:
            end = min(start + (first if start == 0 else steady), total)
            c = min(ctx, start)
            batch = 1 + min(concurrency - 1, int(rng.expovariate(1 / 1.5)))
            shapes.append((batch, end - start + c))
            start = end
    return shapes


def hit_rate(shapes, buckets):
    counts = Counter(shapes)
    hits = {f"B{b}/T{t}": n for (b, t), n in counts.items() if (b, t) in buckets}
    misses = Counter()
    for (b, t), n in counts.items():
        if (b, t) not in buckets:
            misses["batch>1" if b > 1 and (1, t) in buckets else f"B{b}/T{t}"] += n
    return sum(hits.values()) / len(shapes), hits, dict(misses.most_common(8))


def main():
    args = H.parse_args(__doc__)
    dev, dt = H.device(), H.dtype()
    cases = []
    if torch.cuda.is_available():
        model, cfg = M.code2wav(dev, dt, quick=args.quick)
        for batch, frames in [(1, 10), (1, 20), (1, 30), (1, 35), (2, 35), (4, 35), (1, 50)]:
            codes = torch.randint(0, cfg.codebook_size, (batch, cfg.num_quantizers, frames), device=dev)
            static = codes.clone()
            with torch.no_grad():
                eager = H.timeit(lambda: model(codes), args.iters, args.warmup)
                graph = torch.cuda.CUDAGraph()

                def capture():
                    s = torch.cuda.Stream()
                    s.wait_stream(torch.cuda.current_stream())
                    with torch.cuda.stream(s):
                        for _ in range(3):
                            model(static)
                    torch.cuda.current_stream().wait_stream(s)
                    with torch.cuda.graph(graph):
                        capture.out = model(static)

                capture_ms = H.wall_ms(capture)
                replay = H.timeit(graph.replay, args.iters, args.warmup)
                graph.replay()
                err = H.max_abs_err(model(static), capture.out)
            cases.append(H.case(f"B{batch}/T{frames}", {"batch": batch, "frames": frames}, eager, replay, err=err,
                                capture_ms=capture_ms))
    buckets = {(1, 10), (1, 20), (1, 30), (1, 35)}
    wide = buckets | {(b, t) for b in (2, 4, 8) for t in (10, 20, 30, 35)} | {(1, 4), (1, 50)}
    for policy, (first, steady, ctx) in {"uniform 10 (ctx 25)": (10, 10, 25),
                                         "first 4, steady 25 (ctx 25)": (4, 25, 25)}.items():
        shapes = trace(first, steady, ctx)
        for name, bset in (("#1101 buckets B1/T{10,20,30,35}", buckets), ("wider buckets", wide)):
            rate, hits, misses = hit_rate(shapes, bset)
            cases.append(H.case(f"hit rate: {policy}, {name}", {"calls": len(shapes), "buckets": sorted(bset)},
                                None, None, hit_rate=rate, hits_per_shape=hits, top_fallbacks=misses))
    H.summary(cases)
    H.emit(__file__, SUBJECT, TECHNIQUE, cases, args)


if __name__ == "__main__":
    main()
