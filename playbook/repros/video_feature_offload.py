"""sglang#16366: drop the items' device copies of video patches before the vision tower runs.

Before, `get_video_feature` concatenated the items' device-resident patches into
`pixel_values` while the items still referenced their own device tensors, so the
vision call ran with two copies of the video's patches on the GPU. After, each
item's feature is reassigned to a host copy right after the concatenation. The peak
is measured over the whole call, above what was allocated before it. Model:
Qwen3-VL's vision tower from transformers with 4 of its 27 blocks (inference frees
activations block by block, so the peak does not grow with depth); fp32 patches
as the processor emits them; 1280x704 frames, two frames per temporal patch.
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as H  # noqa: E402
import _models as M  # noqa: E402

SUBJECT = "sglang#16366"
TECHNIQUE = "release the items' device copies of video patches before the vision tower runs"


class Item:
    def __init__(self, feature):
        self.feature = feature


def main():
    args = H.parse_args(__doc__)
    dev, dt = H.device(), H.dtype()
    model, cfg = M.qwen3_vl_vision(dev, dt, depth=4, quick=args.quick)
    patch_dim = cfg.in_channels * cfg.temporal_patch_size * cfg.patch_size ** 2
    hw = (44, 80) if not args.quick else (4, 4)
    cases = []

    @torch.no_grad()
    def video_feature(items, grid, offload):
        pixel_values = torch.cat([item.feature for item in items]).type(dt)
        if offload:
            for item in items:
                item.feature = item.feature.cpu()
        return M.vision_output(model(pixel_values, grid_thw=grid))

    for frames in ([32, 64, 128] if not args.quick else [4]):
        t = frames // 2
        grid = torch.tensor([[t, *hw]], device=dev)
        host = torch.randn(t * hw[0] * hw[1], patch_dim)

        def run(offload):
            items = [Item(host.to(dev))]
            H.sync()
            peak = H.peak_mib(lambda: video_feature(items, grid, offload))
            timing = H.timeit(lambda: video_feature([Item(host.to(dev))], grid, offload),
                              max(3, args.iters // 5), 1)
            return peak, timing, video_feature([Item(host.to(dev))], grid, offload)

        peak_b, time_b, out_b = run(False)
        peak_a, time_a, out_a = run(True)
        cases.append(H.case(
            f"{frames} frames 1280x704", {"frames": frames, "patches": int(host.shape[0]), "patch_dim": patch_dim,
                                          "vit_depth": cfg.depth},
            time_b, time_a, peak_before=peak_b, peak_after=peak_a, err=H.max_abs_err(out_b, out_a),
            feature_mib=round(host.numel() * 4 / 2**20, 1)))
    H.summary(cases)
    H.emit(__file__, SUBJECT, TECHNIQUE, cases, args)


if __name__ == "__main__":
    main()
