"""seed:code2wav-first-chunk: a small first vocoder chunk for Qwen3-Omni's first audio.

sglang-omni's Code2Wav scheduler decodes every chunk at one size (10 frames),
the first included, so first audio waits for ten talker frames. This measures, on
Qwen3-Omni's Code2Wav (transformers, random weights, full size):

- decode latency and real-time factor of a first chunk of 2, 4, 8 or 10 frames with
  0, 10 or 25 frames of left context (and of a 25-frame steady chunk);
- a time-to-first-audio model: frames waited x talker frame time + decode of that
  chunk. The talker frame time is an input (`--talker-frame-ms`), not measured
  here: no talker runs on this machine;
- the seam error of chunked decoding (a small first chunk, then 25-frame chunks
  with 0, 10 or 25 frames of left context) against one-shot decoding of the same
  codes: over the whole waveform, near each join, and over the first chunk alone
  (which a causal decoder reproduces exactly). Random weights make the waveform
  noise, so the errors compare settings with each other, not with audible quality.

before = first chunk of 10 frames (today's uniform chunk); after = 4 frames.
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as H  # noqa: E402
import _models as M  # noqa: E402

SUBJECT = "seed:code2wav-first-chunk"
TECHNIQUE = "a 4-frame first vocoder chunk instead of the uniform 10-frame chunk"
MODELLED = ("before_ms", "after_ms")  # the TTFA row adds an assumed talker time to a timed decode
FRAME_MS = 80.0  # 12.5 Hz codec frames


def chunked(model, codes, first, steady, ctx):
    """Decode as a streaming scheduler would: first chunk, then steady chunks with left context."""
    up, wavs, start = int(model.total_upsample), [], 0
    while start < codes.shape[-1]:
        end = min(start + (first if start == 0 else steady), codes.shape[-1])
        c = min(ctx, start)
        wavs.append(model(codes[..., start - c:end])[..., c * up:])
        start = end
    return torch.cat(wavs, dim=-1), [int(sum(w.shape[-1] for w in wavs[:i + 1])) for i in range(len(wavs) - 1)]


def main():
    args = H.parse_args(__doc__, lambda p: p.add_argument("--talker-frame-ms", type=float, default=20.0,
                                                          help="assumed talker time per codec frame (TTFA model input)"))
    dev, dt = H.device(), H.dtype()
    model, cfg = M.code2wav(dev, dt, quick=args.quick)
    g = torch.Generator().manual_seed(0)
    codes = torch.randint(0, cfg.codebook_size, (1, cfg.num_quantizers, 110 if not args.quick else 40), generator=g).to(dev)
    cases = []
    decode = {}
    with torch.no_grad():
        for ctx in (0, 10, 25):
            for n in (2, 4, 8, 10, 25):
                if args.quick and (n > 8 or ctx > 10):
                    continue
                x = codes[..., 30 - ctx:30 + n] if ctx else codes[..., :n]
                decode[(n, ctx)] = H.timeit(lambda: model(x), args.iters, args.warmup)
                cases.append(H.case(f"decode {n} frames, ctx {ctx}", {"new_frames": n, "left_context": ctx, "batch": 1},
                                    None, None, decode_ms=decode[(n, ctx)]["median"],
                                    decode_spread_ms=[decode[(n, ctx)]["p10"], decode[(n, ctx)]["p90"]],
                                    rtf=decode[(n, ctx)]["median"] / (n * FRAME_MS)))
        first_before, first_after = (10, 4) if not args.quick else (8, 4)
        tb, ta = decode[(first_before, 0)], decode[(first_after, 0)]
        ttfa = lambda n, t: {k: n * args.talker_frame_ms + t[k] for k in ("median", "p10", "p90")}  # noqa: E731
        cases.append(H.case("TTFA model: first chunk 10 -> 4 frames", {
            "first_chunk_before": first_before, "first_chunk_after": first_after,
            "assumed_talker_frame_ms": args.talker_frame_ms}, ttfa(first_before, tb), ttfa(first_after, ta),
            modelled={"before_ms": f"{first_before} frames x {args.talker_frame_ms} ms assumed talker time + timed decode",
                      "after_ms": f"{first_after} frames x {args.talker_frame_ms} ms assumed talker time + timed decode"}))
        one_shot = model(codes)
        for first, ctx in ((10, 25), (4, 25), (4, 10), (4, 0)):
            wav, joins = chunked(model, codes, first, 25, ctx)
            n = min(wav.shape[-1], one_shot.shape[-1])
            diff = (wav[..., :n].float() - one_shot[..., :n].float()).abs()
            at_joins = max(float(diff[..., max(0, j - 240):j + 240].max()) for j in joins) if joins else 0.0
            first_part = float(diff[..., :joins[0]].max()) if joins else float(diff.max())
            cases.append(H.case(f"seam: first {first}, steady 25, ctx {ctx}", {
                "frames": int(codes.shape[-1]), "first_chunk": first, "steady_chunk": 25, "left_context": ctx},
                None, None, err=float(diff.max()), max_abs_err_near_joins=at_joins, first_chunk_max_abs_err=first_part,
                mean_abs_err=float(diff.mean()), joins=len(joins)))
    H.summary(cases)
    H.emit(__file__, SUBJECT, TECHNIQUE, cases, args)


if __name__ == "__main__":
    main()
