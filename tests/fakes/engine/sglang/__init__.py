"""Test stand-in for an in-process `sglang.Engine` serving processor-output video.

generate() checks the item the way upstream reads `format: "processor_output"` (tensors, one
item, a [[t, h, w]] grid matching the feature rows and the pad tokens in input_ids) and answers
with the colour the pixels show, streamed like Engine.generate(stream=True): every chunk carries
the whole text so far. FAKE_ENGINE=no-start makes the constructor fail.
"""
import os
from collections import Counter

VIDEO_PAD, MERGE = 151656, 2
COLOURS = {"red": (220, 30, 30), "green": (30, 160, 60), "blue": (30, 60, 220),
           "yellow": (240, 200, 20), "purple": (130, 40, 160), "orange": (245, 130, 20)}


class Engine:
    def __init__(self, **kwargs):
        if os.environ.get("FAKE_ENGINE") == "no-start":
            raise RuntimeError("Not enough memory. Please try to increase --mem-fraction-static.\nmore")
        assert "model_path" in kwargs
        self.kwargs = kwargs

    def generate(self, input_ids=None, video_data=None, sampling_params=None, stream=False, **kwargs):
        (item,) = video_data
        if item.get("format") != "processor_output":
            raise ValueError(f"format {item.get('format')!r}")
        rows, grid = item["pixel_values_videos"], item["video_grid_thw"]
        if not hasattr(rows, "shape") or not hasattr(grid, "shape"):
            raise TypeError("pixel_values_videos and video_grid_thw must be tensors, not lists")
        if grid.ndim != 2 or grid.shape[1] != 3:
            raise ValueError(f"video_grid_thw must be [[t, h, w]], got shape {grid.shape}")
        patches = int(sum(t * h * w for t, h, w in grid.tolist()))
        if rows.shape[0] != patches:
            raise ValueError(f"pixel_values_videos has {rows.shape[0]} rows, video_grid_thw implies {patches}")
        if input_ids.count(VIDEO_PAD) != patches // (MERGE * MERGE):
            raise ValueError("input_ids pad tokens do not match video_grid_thw")
        words = ("I see: square " + _colour(rows)).split()
        chunks = [{"text": " ".join(words[:i]), "meta_info": {"id": "g", "prompt_tokens": len(input_ids),
                                                                 "completion_tokens": i, "finish_reason": None}}
                  for i in range(1, len(words) + 1)]
        return iter(chunks) if stream else chunks[-1]

    def shutdown(self):
        pass


def _colour(rows) -> str:
    """The palette colour nearest the most common non-white RGB triple of the feature rows."""
    triples = (rows.reshape(-1, 3) * 255).round().astype(int)
    counts = Counter(tuple(t) for t in triples.tolist() if min(t) < 235)
    if not counts:
        return "nothing"
    rgb = counts.most_common(1)[0][0]
    return min(COLOURS, key=lambda c: sum((a - b) ** 2 for a, b in zip(COLOURS[c], rgb)))
