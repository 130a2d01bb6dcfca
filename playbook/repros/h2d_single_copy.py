"""sglang#26167: one host-to-device copy of a request's pixel patches instead of one per item.

Before, the embedding path moved every multimodal item's patches to the GPU on
its own, then `get_image_feature` concatenated them and cast them to the tower's
dtype on the device; after, the items stay on the host, the concatenation and the
cast run there, and the tower makes one `non_blocking` copy of the result (from
pageable memory, as sglang's processor output is).
Shapes are Qwen3-VL's: 1536 values per patch (3 channels x 2 frames x 16 x 16),
3,520 patches for a 1280x704 image, fp32 as the processor emits them.
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as H  # noqa: E402

SUBJECT = "sglang#26167"
TECHNIQUE = "one batched H2D copy of all items' patches instead of one copy per item"


def main():
    args = H.parse_args(__doc__)
    dev = H.device()
    cases = []
    patch_dim = 1536
    plans = [(1, 3520), (8, 3520), (32, 784), (64, 784)] if not args.quick else [(2, 64), (4, 32)]
    for n_items, patches in plans:
        items = [torch.randn(patches, patch_dim) for _ in range(n_items)]

        def before():
            moved = [x.to(dev) for x in items]
            return torch.cat(moved).type(H.dtype())

        def after():
            return torch.cat(items).type(H.dtype()).to(dev, non_blocking=True)

        ref, new = before(), after()
        H.sync()
        cases.append(H.case(
            f"{n_items} items x {patches} patches", {"items": n_items, "patches_per_item": patches, "patch_dim": patch_dim,
                                                     "host_dtype": "float32"},
            H.timeit(before, args.iters, args.warmup), H.timeit(after, args.iters, args.warmup),
            err=H.max_abs_err(ref, new), copies_before=n_items, copies_after=1,
            mib_copied_before=round(n_items * patches * patch_dim * 4 / 2**20, 1),
            mib_copied_after=round(n_items * patches * patch_dim * H.dtype().itemsize / 2**20, 1)))
    H.summary(cases)
    H.emit(__file__, SUBJECT, TECHNIQUE, cases, args)


if __name__ == "__main__":
    main()
