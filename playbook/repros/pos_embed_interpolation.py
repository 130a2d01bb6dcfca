"""sglang#16781: Qwen3-VL position-embedding interpolation from host-built indices, one lookup.

Before, `fast_pos_embed_interpolate` ran `F.interpolate` (bilinear) over the whole
48 x 48 learned grid once per item, then reshaped, permuted and repeated it. After,
the four bilinear corner indices and weights of every patch are built with NumPy
on the host, one embedding lookup of 4 x patches rows and one weighted sum run
on the device, and each item is permuted into spatial-merge order. Shapes:
Qwen3-VL's 2304-entry grid of width 1152, merge size 2, align_corners False.
"""
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as H  # noqa: E402

SUBJECT = "sglang#16781"
TECHNIQUE = "bilinear corners from NumPy indices and one embedding lookup instead of F.interpolate per item"


def main():
    args = H.parse_args(__doc__)
    dev, dt = H.device(), H.dtype()
    side, hidden, merge = 48, 1152 if not args.quick else 32, 2
    embed = torch.nn.Embedding(side * side, hidden).to(dev, dt)

    def before(grids):
        grid = embed(torch.arange(side * side, device=dev)).permute(1, 0).reshape(1, -1, side, side)
        out = []
        for t, h, w in grids:
            pe = F.interpolate(grid, size=(h, w), mode="bilinear", align_corners=False)
            pe = pe.reshape(-1, h // merge, merge, w // merge, merge).permute(1, 3, 2, 4, 0)
            out.append(pe.flatten(0, 3).repeat(t, 1))
        return torch.cat(out)

    def indices(n):
        idx = (np.arange(n, dtype=np.float32) + 0.5) * (side / n) - 0.5
        return np.clip(idx, 0, side - 1)

    def after(grids):
        sizes = [h * w for _, h, w in grids]
        all_idx = np.zeros((4, sum(sizes)), dtype=np.int64)
        all_w = np.zeros((4, sum(sizes)), dtype=np.float32)
        cur = 0
        for _, h, w in grids:
            hi, wi = indices(h), indices(w)
            hf, wf = np.floor(hi).astype(np.int64), np.floor(wi).astype(np.int64)
            hc, wc = np.clip(hf + 1, 0, side - 1), np.clip(wf + 1, 0, side - 1)
            dh, dw = hi - hf, wi - wf
            corners = [(hf, wf, (1 - dh)[:, None] * (1 - dw)), (hf, wc, (1 - dh)[:, None] * dw),
                       (hc, wf, dh[:, None] * (1 - dw)), (hc, wc, dh[:, None] * dw)]
            for i, (a, b, wt) in enumerate(corners):
                all_idx[i, cur:cur + h * w] = (a[:, None] * side + b).flatten()
                all_w[i, cur:cur + h * w] = wt.flatten()
            cur += h * w
        idx = torch.from_numpy(all_idx).to(dev)
        wts = torch.from_numpy(all_w).to(dev, dt)
        pe = (embed(idx.view(-1)).view(4, cur, -1) * wts.unsqueeze(-1)).sum(0)
        out = []
        for part, (t, h, w) in zip(pe.split(sizes), grids):
            part = part.repeat(t, 1).view(t, h // merge, merge, w // merge, merge, -1)
            out.append(part.permute(0, 1, 3, 2, 4, 5).flatten(0, 4))
        return torch.cat(out)

    plans = {"1 image 44x80": [(1, 44, 80)], "8 images 44x80": [(1, 44, 80)] * 8,
             "16 images 28x28": [(1, 28, 28)] * 16, "video 32x44x80": [(32, 44, 80)]} if not args.quick else {
        "tiny": [(1, 4, 6), (2, 6, 4)]}
    cases = []
    with torch.no_grad():
        for name, grids in plans.items():
            cases.append(H.case(name, {"grids": grids, "hidden": hidden, "grid_side": side},
                                H.timeit(lambda: before(grids), args.iters, args.warmup),
                                H.timeit(lambda: after(grids), args.iters, args.warmup),
                                err=H.max_abs_err(before(grids), after(grids))))
    H.summary(cases)
    H.emit(__file__, SUBJECT, TECHNIQUE, cases, args)


if __name__ == "__main__":
    main()
