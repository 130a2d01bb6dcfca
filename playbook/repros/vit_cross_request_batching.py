"""sglang#24013 / #25910: one vision-tower call for the images of several requests.

Before, the chunked-prefill embedding path encoded each request's images with its
own vision-tower call; after, the cache misses of every request in the batch go
through one call (attention stays per image through cu_seqlens) and the output is
split back by token count. Model: Qwen3-VL's vision tower from transformers at full
size (27 blocks of 1152), random weights; one 1280x704 image (3,520 patches) per
request.
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as H  # noqa: E402
import _models as M  # noqa: E402

SUBJECT = "sglang#25910"
TECHNIQUE = "batch the vision encoding of several requests into one tower call"


def main():
    args = H.parse_args(__doc__)
    dev, dt = H.device(), H.dtype()
    model, cfg = M.qwen3_vl_vision(dev, dt, quick=args.quick)
    patch_dim = cfg.in_channels * cfg.temporal_patch_size * cfg.patch_size ** 2
    grid = (1, 44, 80) if not args.quick else (1, 4, 4)
    patches = grid[0] * grid[1] * grid[2]
    cases = []
    for reqs in ([1, 2, 4, 8, 16] if not args.quick else [1, 2]):
        pixels = [torch.randn(patches, patch_dim, device=dev, dtype=dt) for _ in range(reqs)]
        one = torch.tensor([grid], device=dev)

        @torch.no_grad()
        def before():
            return torch.cat([M.vision_output(model(p, grid_thw=one)) for p in pixels])

        @torch.no_grad()
        def after():
            return M.vision_output(model(torch.cat(pixels), grid_thw=one.repeat(reqs, 1)))

        iters = max(3, args.iters // 3)
        cases.append(H.case(
            f"{reqs} requests x 1 image", {"requests": reqs, "patches_per_image": patches, "depth": cfg.depth,
                                           "hidden": cfg.hidden_size},
            H.timeit(before, iters, args.warmup), H.timeit(after, iters, args.warmup),
            peak_before=H.peak_mib(before), peak_after=H.peak_mib(after), err=H.max_abs_err(before(), after()),
            tower_calls_before=reqs, tower_calls_after=1))
    H.summary(cases)
    H.emit(__file__, SUBJECT, TECHNIQUE, cases, args)


if __name__ == "__main__":
    main()
