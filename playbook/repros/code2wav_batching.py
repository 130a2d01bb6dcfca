"""sglang-omni#1126: Code2Wav windows of several requests stacked into one eager forward.

#1126's bounded wait/floor batcher stacks equal-width later windows of up to 8
requests into one `[B, Q, T]` eager Code2Wav forward (graphs off), firing at
`batch_floor` ready windows or when the oldest has waited `max_batch_wait_ms`. Its
thread reports component efficiency at batch 2, 4 and 8. Measured here, on
transformers' Qwen3-Omni Code2Wav (random weights, full size), for steady windows of
35 frames (25 of left context + 10 new) and for first windows of 10:

- B windows decoded one forward each, back to back (before), against one forward of
  the B windows stacked (after), B = 2, 4, 8, both timed as one region each.
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as H  # noqa: E402
import _models as M  # noqa: E402

SUBJECT = "sglang-omni#1126"
TECHNIQUE = ("ours, following #1126: equal-width Code2Wav windows of B requests in one eager forward instead of "
             "B forwards")


def main():
    args = H.parse_args(__doc__)
    dev, dt = H.device(), H.dtype()
    model, cfg = M.code2wav(dev, dt, quick=args.quick)
    cases = []
    with torch.no_grad():
        for frames in ((35, 10) if not args.quick else (6,)):
            for b in ((2, 4, 8) if not args.quick else (2,)):
                codes = torch.randint(0, cfg.codebook_size, (b, cfg.num_quantizers, frames), device=dev)
                rows = [codes[i:i + 1] for i in range(b)]
                serial = H.timeit(lambda: [model(r) for r in rows], args.iters, args.warmup)
                batched = H.timeit(lambda: model(codes), args.iters, args.warmup)
                err = H.max_abs_err(torch.cat([model(r) for r in rows]), model(codes))
                cases.append(H.case(f"B{b}/T{frames}: {b} forwards -> 1", {"batch": b, "frames": frames},
                                    serial, batched, err=err))
    H.summary(cases)
    H.emit(__file__, SUBJECT, TECHNIQUE, cases, args)


if __name__ == "__main__":
    main()
