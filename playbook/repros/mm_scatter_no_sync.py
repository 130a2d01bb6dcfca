"""sglang#26082: scatter multimodal embeddings with masked_scatter_ instead of torch.where + index_put.

`torch.where(mask)` must know how many positions are set, so it copies the count
to the host and blocks the CPU until the GPU has finished everything queued
before it; `masked_scatter_` keeps the whole scatter on the device. The host-side
cost shows when the GPU is busy: each case queues a matmul that keeps the GPU busy
for a few milliseconds, then times how long the host is blocked by the scatter.
Shapes: a Qwen3-VL-8B prefill (hidden 4096) with image tokens in the middle.
"""
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as H  # noqa: E402

SUBJECT = "sglang#26082"
TECHNIQUE = "masked_scatter_ (no host sync) instead of torch.where + index_put"


def main():
    args = H.parse_args(__doc__)
    dev, dt = H.device(), H.dtype()
    hidden = 4096 if not args.quick else 64
    plans = [(4096, 1024), (16384, 7040), (32768, 28160)] if not args.quick else [(128, 32)]
    busy_a = torch.randn(4096 if not args.quick else 64, 4096 if not args.quick else 64, device=dev, dtype=dt)
    cases = []
    for tokens, image_tokens in plans:
        embeds = torch.randn(tokens, hidden, device=dev, dtype=dt)
        mask = torch.zeros(tokens, 1, dtype=torch.bool, device=dev)
        start = (tokens - image_tokens) // 2
        mask[start:start + image_tokens] = True
        image = torch.randn(image_tokens, hidden, device=dev, dtype=dt)

        def before(dest=None):
            dest = embeds.clone() if dest is None else dest
            indices = torch.where(mask.squeeze(dim=-1))[0]
            dest[indices] = image.to(dest.device, dest.dtype)
            return dest

        def after(dest=None):
            dest = embeds.clone() if dest is None else dest
            dest.masked_scatter_(mask.expand_as(dest), image.to(dest.device, dest.dtype))
            return dest

        err = H.max_abs_err(before(), after())

        def host_blocked(fn):
            # queue GPU work first, then measure how long the host is held by fn
            samples = []
            for _ in range(args.iters):
                H.sync()
                for _ in range(8):
                    busy_a @ busy_a
                t0 = time.perf_counter()
                fn()
                samples.append((time.perf_counter() - t0) * 1e3)
                H.sync()
            samples.sort()
            return samples[len(samples) // 2]

        cases.append(H.case(
            f"{tokens} tokens, {image_tokens} image tokens", {"tokens": tokens, "image_tokens": image_tokens,
                                                              "hidden": hidden},
            H.timeit(before, args.iters, args.warmup), H.timeit(after, args.iters, args.warmup), err=err,
            host_blocked_ms_before=host_blocked(before), host_blocked_ms_after=host_blocked(after)))
    H.summary(cases)
    H.emit(__file__, SUBJECT, TECHNIQUE, cases, args)


if __name__ == "__main__":
    main()
