"""sglang#20282: Qwen3-VL patch embedding as one GEMM (unfold + F.linear) instead of nn.Conv3d.

When kernel equals stride, with no padding, a Conv3d over non-overlapping
patches is a matrix multiply against the weight reshaped to (out, in*kt*kh*kw).
The PR made `Conv3dLayer` take that path (it also dodged a cuDNN Conv3d
regression of torch 2.9.1). Shapes: Qwen3-VL's patch embed, 3 x 2 x 16 x 16 ->
1152, patches as the processor flattens them.
"""
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as H  # noqa: E402

SUBJECT = "sglang#20282"
TECHNIQUE = "Conv3d patch embedding computed as F.linear on the flattened patches"


def main():
    args = H.parse_args(__doc__)
    dev, dt = H.device(), H.dtype()
    cin, kt, k, hidden = 3, 2, 16, 1152 if not args.quick else 64
    conv = torch.nn.Conv3d(cin, hidden, (kt, k, k), stride=(kt, k, k), bias=True).to(dev, dt).eval()
    w2d = conv.weight.reshape(hidden, -1)
    cases = []
    for patches in ([3520, 28160, 112640] if not args.quick else [64]):
        x = torch.randn(patches, cin * kt * k * k, device=dev, dtype=dt)

        @torch.no_grad()
        def before():
            return conv(x.view(-1, cin, kt, k, k)).view(-1, hidden)

        @torch.no_grad()
        def after():
            return F.linear(x, w2d, conv.bias)

        cases.append(H.case(
            f"{patches} patches", {"patches": patches, "in": cin * kt * k * k, "out": hidden},
            H.timeit(before, args.iters, args.warmup), H.timeit(after, args.iters, args.warmup),
            peak_before=H.peak_mib(before), peak_after=H.peak_mib(after), err=H.max_abs_err(before(), after()),
            cudnn=torch.backends.cudnn.version() if torch.cuda.is_available() else None))
    H.summary(cases)
    H.emit(__file__, SUBJECT, TECHNIQUE, cases, args)


if __name__ == "__main__":
    main()
