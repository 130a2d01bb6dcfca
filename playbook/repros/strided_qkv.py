"""sglang#35336: feed the packed qkv projection to attention as strided views, not dense copies.

`qkv_proj` writes q, k and v interleaved into one buffer; slicing it yields views
whose only non-unit stride is over tokens. Before, `VisionAttention` called
`.contiguous()` on each of q, k and v (three copies of the projection output per
layer); after, backends that take per-dim strides read the views directly. Here the
backend is torch's scaled_dot_product_attention, one image per batch entry.
Shapes: Qwen3-VL's vision attention, 16 heads of 72, 3,520 patches per image.
"""
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as H  # noqa: E402

SUBJECT = "sglang#35336"
TECHNIQUE = "pass strided q/k/v views of the packed qkv output instead of three contiguous copies"


def main():
    args = H.parse_args(__doc__)
    dev, dt = H.device(), H.dtype()
    heads, head_dim = (16, 72) if not args.quick else (2, 8)
    cases = []
    for images, patches in ([(1, 3520), (8, 3520), (32, 784)] if not args.quick else [(2, 16)]):
        qkv = torch.randn(images, patches, 3 * heads * head_dim, device=dev, dtype=dt)

        def split():
            q, k, v = qkv.view(images, patches, 3, heads, head_dim).unbind(2)
            return [x.transpose(1, 2) for x in (q, k, v)]  # [B, H, S, D] views

        def before():
            q, k, v = [x.contiguous() for x in split()]
            return F.scaled_dot_product_attention(q, k, v)

        def after():
            q, k, v = split()
            return F.scaled_dot_product_attention(q, k, v)

        def copies_only():
            return [x.contiguous() for x in split()]

        copy_t = H.timeit(copies_only, args.iters, args.warmup)
        cases.append(H.case(
            f"{images} x {patches} patches", {"images": images, "patches": patches, "heads": heads, "head_dim": head_dim},
            H.timeit(before, args.iters, args.warmup), H.timeit(after, args.iters, args.warmup),
            peak_before=H.peak_mib(before), peak_after=H.peak_mib(after), err=H.max_abs_err(before(), after()),
            copy_ms=copy_t["median"]))
    H.summary(cases)
    H.emit(__file__, SUBJECT, TECHNIQUE, cases, args)


if __name__ == "__main__":
    main()
