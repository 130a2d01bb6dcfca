"""sglang-omni#1355: the 555-sample gap at every streamed Code2Wav chunk boundary, and its fix.

Code2Wav's causal transposed convolutions trim on the right, so a decode of W frames
returns fewer than W x 1920 samples (the card of #1355 puts the deficit at 555). The
old scheduler cut `context x 1920` samples from the left of each `[context | new]`
window and so lost each chunk's last samples; #1355 keeps the last `new x 1920`
instead. Measured here, on transformers' Qwen3-Omni Code2Wav (random weights, full
size), streaming 10-frame chunks with 25 frames of left context over 110 frames:

- the deficit of one decode, in samples (window x 1920 - output length);
- both slicings (before: trim the context from the left; after: keep the last new
  frames): samples missing against a one-shot decode, the error against one-shot
  decoding once aligned, the omni-speech lane's seam score (playbook/lanes/_seams.py)
  on the 16-bit stream, and the decode time of the whole stream, which the slicing
  does not change. Random weights make the waveform noise-like, so the seam score's
  within-chunk reference is high; the alignment error is the sharper witness.
"""
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "lanes"))
import _harness as H  # noqa: E402
import _models as M  # noqa: E402
from _seams import seam_scores  # noqa: E402

SUBJECT = "sglang-omni#1355"
TECHNIQUE = "keep each window's last new x 1920 samples instead of trimming context x 1920 from the left"
CHUNK, CTX = 10, 25


def stream(model, codes, keep_last: bool):
    up, out, start = int(model.total_upsample), [], 0
    while start < codes.shape[-1]:
        end = min(start + CHUNK, codes.shape[-1])
        c = min(CTX, start)
        wav = model(codes[..., start - c:end])
        out.append(wav[..., -(end - start) * up:] if keep_last else wav[..., c * up:])
        start = end
    return out


def pcm16(chunks):
    return [(c.float().clamp(-1, 1) * 32767).round().to(torch.int16).cpu().numpy().tobytes() for c in chunks]


def main():
    args = H.parse_args(__doc__)
    dev, dt = H.device(), H.dtype()
    model, cfg = M.code2wav(dev, dt, quick=args.quick)
    up = int(model.total_upsample)
    g = torch.Generator().manual_seed(0)
    frames = 110 if not args.quick else 30
    codes = torch.randint(0, cfg.codebook_size, (1, cfg.num_quantizers, frames), generator=g).to(dev)
    cases = []
    with torch.no_grad():
        one_shot = model(codes)
        deficit = frames * up - one_shot.shape[-1]
        rows = {}
        for keep_last in (False, True):
            chunks = stream(model, codes, keep_last)
            wav = torch.cat(chunks, dim=-1)
            n = min(wav.shape[-1], one_shot.shape[-1])
            joins = [sum(c.shape[-1] for c in chunks[:i + 1]) for i in range(len(chunks) - 1)]
            err_after_first_join = float((wav[..., joins[0]:n].float() - one_shot[..., joins[0]:n].float()).abs().max())
            scores = seam_scores(pcm16(chunks))
            rows[keep_last] = {"t": H.timeit(lambda: stream(model, codes, keep_last), max(3, args.iters // 3),
                                             args.warmup),
                               "missing_samples": int(one_shot.shape[-1] - wav.shape[-1]),
                               "err_vs_one_shot_after_join_1": err_after_first_join,
                               "seam_worst": max(scores), "seam_median": sorted(scores)[len(scores) // 2],
                               "joins": len(joins), "chunk_samples": [int(c.shape[-1]) for c in chunks[:3]]}
        b, a = rows[False], rows[True]
        cases.append(H.case("stream 110 frames: trim-left -> keep-last", {
            "frames": frames, "chunk": CHUNK, "left_context": CTX, "samples_per_frame": up},
            b["t"], a["t"], err=a["err_vs_one_shot_after_join_1"],
            decode_deficit_samples=int(deficit),
            missing_samples_before=b["missing_samples"], missing_samples_after=a["missing_samples"],
            chunk_samples_before=b["chunk_samples"], chunk_samples_after=a["chunk_samples"],
            err_vs_one_shot_before=b["err_vs_one_shot_after_join_1"],
            err_vs_one_shot_after=a["err_vs_one_shot_after_join_1"],
            seam_worst_before=b["seam_worst"], seam_worst_after=a["seam_worst"],
            seam_median_before=b["seam_median"], seam_median_after=a["seam_median"], joins=b["joins"]))
    H.summary(cases)
    H.emit(__file__, SUBJECT, TECHNIQUE, cases, args)


if __name__ == "__main__":
    main()
