"""Test stand-in for `transformers` with Qwen-VL's processor contract, on numpy.

The prompt's <|video_pad|> grows to one token per merged 2x2 patch, pixel_values_videos has one
row per 14x14 patch of a frame pair, video_grid_thw is [[t, h, w]]. Rows hold the patch's RGB
triples / 255 so a stand-in engine can read the colour back. FAKE_PROCESSOR=bad-grid|missing-model
breaks it on purpose. Arrays stand in for torch tensors (return_tensors="pt").
"""
import os

import numpy as np

VIDEO_PAD = 151656


class _Processor:
    def apply_chat_template(self, messages, add_generation_prompt=False, tokenize=True):
        assert tokenize is False and add_generation_prompt
        parts = messages[0]["content"]
        assert [p["type"] for p in parts] == ["video", "text"]
        return ("<|im_start|>user\n<|vision_start|><|video_pad|><|vision_end|>" + parts[1]["text"]
                + "<|im_end|>\n<|im_start|>assistant\n")

    def __call__(self, text, videos, return_tensors=None, video_metadata=None, do_sample_frames=True):
        assert return_tensors == "pt" and do_sample_frames is False and video_metadata[0]["fps"] > 0
        (video,) = videos
        assert video.dtype == np.uint8 and video.ndim == 4 and video.shape[-1] == 3
        t, h, w = video.shape[0] // 2, video.shape[1] // 14, video.shape[2] // 14
        rows = (video[: t * 2].reshape(t, 2, h, 14, w, 14, 3).transpose(0, 2, 4, 1, 3, 5, 6)
                .reshape(t * h * w, 2 * 14 * 14 * 3).astype(np.float32) / 255)
        grid = np.array([[t, h, w]], dtype=np.int64)
        if os.environ.get("FAKE_PROCESSOR") == "bad-grid":
            grid = grid * 2
        before, after = text[0].split("<|video_pad|>")
        ids = [ord(c) for c in before] + [VIDEO_PAD] * (t * h * w // 4) + [ord(c) for c in after]
        return {"input_ids": np.array([ids]), "attention_mask": np.ones((1, len(ids)), dtype=np.int64),
                "pixel_values_videos": rows, "video_grid_thw": grid}


class AutoProcessor:
    @staticmethod
    def from_pretrained(name):
        if os.environ.get("FAKE_PROCESSOR") == "missing-model":
            raise OSError(f"{name} does not appear to have a file named preprocessor_config.json.\nmore")
        return _Processor()
