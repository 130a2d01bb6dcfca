"""sglang#15205: Qwen3-VL vision rotary tables gathered from a prebuilt cos/sin cache.

Before, every forward of the vision tower built the rotary frequencies (an outer
product of positions and inverse frequencies), gathered them per patch and then
ran `cos` and `sin` over the whole `[patches, head_dim/2]` table. After, the
module keeps a `cos_sin_cache` of `max_position` rows built once, and a forward
only gathers rows. Shapes: head_dim 72 (hidden 1152 / 16 heads), 2-D positions of
Qwen3-VL's spatial-merge order.
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as H  # noqa: E402

SUBJECT = "sglang#15205"
TECHNIQUE = "gather from a prebuilt cos/sin cache instead of recomputing rotary trig per forward"


def pos_ids(grids, merge=2, device="cpu"):
    out = []
    for t, h, w in grids:
        hpos = torch.arange(h).unsqueeze(1).expand(-1, w)
        wpos = torch.arange(w).unsqueeze(0).expand(h, -1)
        hpos = hpos.reshape(h // merge, merge, w // merge, merge).permute(0, 2, 1, 3).flatten()
        wpos = wpos.reshape(h // merge, merge, w // merge, merge).permute(0, 2, 1, 3).flatten()
        out.append(torch.stack([hpos, wpos], dim=-1).repeat(t, 1))
    return torch.cat(out).to(device)


def main():
    args = H.parse_args(__doc__)
    dev = H.device()
    head_dim, theta, max_position = 72, 10000.0, 8192
    rot = head_dim // 2  # rotary dim of the 2-D vision rope: half per axis
    inv_freq = 1.0 / (theta ** (torch.arange(0, rot, 2, dtype=torch.float32, device=dev) / rot))
    positions = torch.arange(max_position, dtype=torch.float32, device=dev)
    table = torch.outer(positions, inv_freq)
    cos_cache, sin_cache = table.cos(), table.sin()  # built once, as the cache is
    plans = {"1 image 44x80": [(1, 44, 80)], "8 images 44x80": [(1, 44, 80)] * 8,
             "video 32x44x80": [(32, 44, 80)]} if not args.quick else {"tiny": [(1, 4, 4)]}
    cases = []
    for name, grids in plans.items():
        ids = pos_ids(grids, device=dev)
        max_hw = max(max(h, w) for _, h, w in grids)

        def before():
            seq = torch.arange(max_hw, dtype=torch.float32, device=dev)
            freqs = torch.outer(seq, inv_freq)
            emb = freqs[ids].flatten(1)
            return emb.cos(), emb.sin()

        def after():
            return cos_cache[ids].flatten(1), sin_cache[ids].flatten(1)

        (cb, sb), (ca, sa) = before(), after()
        cases.append(H.case(name, {"patches": int(ids.shape[0]), "head_dim": head_dim, "grids": grids},
                            H.timeit(before, args.iters, args.warmup), H.timeit(after, args.iters, args.warmup),
                            err=max(H.max_abs_err(cb, ca), H.max_abs_err(sb, sa))))
    H.summary(cases)
    H.emit(__file__, SUBJECT, TECHNIQUE, cases, args)


if __name__ == "__main__":
    main()
