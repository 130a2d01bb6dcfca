"""seed:encoder-batching-window: encoder latency against batch size, and the max_batch_wait_ms trade-off.

sglang-omni's Qwen3-Omni image and audio encoder stages wait up to 50 ms to form a
batch, even for a lone request. This measures, with transformers' Qwen3-VL vision
tower (the Omni image encoder's architecture, 27 blocks of 1152; 448x448 images)
and Qwen3-Omni's audio encoder (32 layers of 1280; 10 s clips), random weights:

- latency of one call at batch 1..32, against the same items one call each;
- then a queueing simulation over seeded Poisson arrivals using the measured
  vision latency curve: the batcher blocks `max_batch_wait_ms` after the first
  request of a batch (as the scheduler's collect loop does), takes what arrived
  (up to 32) and runs it; mean and p99 latency per window and arrival rate.

before = the 50 ms window; after = the window with the lowest p99 at that rate.
"""
import bisect
import random
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as H  # noqa: E402
import _models as M  # noqa: E402

SUBJECT = "seed:encoder-batching-window"
TECHNIQUE = "a shorter encoder batching window (max_batch_wait_ms) than the hard-coded 50 ms"
MODELLED = ("before_ms", "after_ms")  # b x batch-1 for "one call each"; the window rows are a simulation
WINDOWS = (0, 1, 5, 10, 20, 50)


def simulate(service_ms: dict[int, float], rate_per_s: float, window_ms: float, n=20000, max_batch=32, seed=0):
    rng = random.Random(seed)
    t, arrivals = 0.0, []
    for _ in range(n):
        t += rng.expovariate(rate_per_s) * 1e3
        arrivals.append(t)
    sizes = sorted(service_ms)

    def service(b):
        i = bisect.bisect_left(sizes, b)
        if i < len(sizes) and sizes[i] == b:
            return service_ms[b]
        lo, hi = sizes[max(0, i - 1)], sizes[min(i, len(sizes) - 1)]
        if hi == lo:
            return service_ms[lo] * b / lo
        return service_ms[lo] + (service_ms[hi] - service_ms[lo]) * (b - lo) / (hi - lo)

    free_at, i, lat = 0.0, 0, []
    while i < n:
        start = max(free_at, arrivals[i])  # the batcher picks up the first waiting request
        close = start + window_ms
        j = i
        while j < n and j - i < max_batch and arrivals[j] <= close:
            j += 1
        done = max(close, arrivals[j - 1]) + service(j - i)
        lat.extend(done - a for a in arrivals[i:j])
        free_at, i = done, j
    lat.sort()
    return sum(lat) / len(lat), lat[int(0.99 * (len(lat) - 1))]


def main():
    args = H.parse_args(__doc__)
    dev, dt = H.device(), H.dtype()
    cases = []
    batches = [1, 2, 4, 8, 16, 32] if not args.quick else [1, 2]
    iters = max(3, args.iters // 5)
    vision, vcfg = M.qwen3_vl_vision(dev, dt, quick=args.quick)
    patch_dim = vcfg.in_channels * vcfg.temporal_patch_size * vcfg.patch_size ** 2
    grid = (1, 28, 28) if not args.quick else (1, 4, 4)
    patches = grid[0] * grid[1] * grid[2]
    curve = {}
    with torch.no_grad():
        one = torch.tensor([grid], device=dev)
        vision_t = {}
        for b in batches:
            x = torch.randn(b * patches, patch_dim, device=dev, dtype=dt)
            vision_t[b] = H.timeit(lambda: vision(x, grid_thw=one.repeat(b, 1)), iters, args.warmup)
            curve[b] = vision_t[b]["median"]
        audio, acfg = M.audio_encoder(dev, dt, quick=args.quick)
        frames = 1000 if not args.quick else 200
        mel = torch.randn(acfg.num_mel_bins, frames, device=dev, dtype=dt)
        audio_t = {b: H.timeit(lambda: M.encode_audio(audio, [mel] * b), iters, args.warmup) for b in batches}
    # before: b requests each in its own call (b x the batch-1 time); after: one call of b
    for name, timings, shape in (("vision", vision_t, {"patches_per_image": patches}),
                                 ("audio", audio_t, {"mel_frames": frames})):
        for b in batches:
            seq = {k: b * timings[1][k] for k in ("median", "p10", "p90")}
            cases.append(H.case(f"{name} encoder batch {b}", {"encoder": name, "batch": b, **shape}, seq, timings[b],
                                modelled={"before_ms": f"{b} x the timed batch-1 median (one call each, not timed)"}))
    for rate in (5, 20, 50, 100):
        rows = {w: simulate(curve, rate, w) for w in WINDOWS}
        best = min(WINDOWS, key=lambda w: rows[w][1])
        cases.append(H.case(f"window sim: {rate} req/s", {"arrival_rate_per_s": rate, "windows_ms": list(WINDOWS)},
                            {"median": rows[50][1], "p10": rows[50][1], "p90": rows[50][1]},
                            {"median": rows[best][1], "p10": rows[best][1], "p90": rows[best][1]},
                            modelled={"before_ms": "p99 of a queueing simulation at the 50 ms window over the "
                                                   "timed vision latency curve",
                                      "after_ms": "p99 of the same simulation at the best window"},
                            best_window_ms=best, mean_ms={str(w): round(m, 3) for w, (m, _) in rows.items()},
                            p99_ms={str(w): round(p, 3) for w, (_, p) in rows.items()}))
    H.summary(cases)
    H.emit(__file__, SUBJECT, TECHNIQUE, cases, args)


if __name__ == "__main__":
    main()
