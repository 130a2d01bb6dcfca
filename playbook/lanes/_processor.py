"""Processor-output video: the HF processor runs on the client, its tensors go to an in-process sglang.Engine.

Upstream accepts `format: "processor_output"` items only with tensors, through
`Engine.generate` (test/registered/vlm/test_vlm_input_format.py passes
`dict(processor_output, format="processor_output")`). Over HTTP it cannot work: sglang
0.5.23's /generate decodes each video_data item as a MediaRef, which refuses unknown keys
such as pixel_values_videos, and older servers hand the JSON lists to code that needs tensors.
"""

from __future__ import annotations

from _lane import LaneError, LaneSkip
from _media import avi_frames

PIP_PROCESSOR = "python -m pip install numpy 'transformers>=4.57'"
WHY_IN_PROCESS = ("processor-output video needs tensors, so it runs in-process (sglang.Engine): sglang 0.5.23's "
                  "/generate decodes each video_data item as a MediaRef, which refuses pixel_values_videos, and "
                  "older servers pass JSON lists where the model needs tensors")


def load_processor(model: str):
    """The model's HF processor; a missing library skips the lane, an unloadable processor is one line."""
    missing = [m for m in ("numpy", "transformers") if not _importable(m)]
    if missing:
        raise LaneSkip(f"--video-input processor needs {' and '.join(missing)} on the client: {PIP_PROCESSOR}")
    from transformers import AutoProcessor

    try:
        return AutoProcessor.from_pretrained(model)
    except Exception as exc:  # noqa: BLE001 - hub, config and version errors all end the run the same way
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise LaneError(f"cannot load the HF processor of {model}: {type(exc).__name__}: {first}"[:300]) from None


def _importable(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def generate_kwargs(processor, model: str, avi: bytes, size: int, fps: int, question: str, max_tokens: int) -> dict:
    """Engine.generate keyword arguments for one clip: input_ids plus one processor_output video item."""
    import numpy as np

    # AVI DIB frames are bottom-up BGR; the processor wants top-down RGB (T, H, W, 3).
    frames = np.stack([np.frombuffer(f, np.uint8).reshape(size, size, 3)[::-1, :, ::-1] for f in avi_frames(avi)])
    msgs = [{"role": "user", "content": [{"type": "video"}, {"type": "text", "text": question}]}]
    try:
        prompt = processor.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
        # The frames are already the ones to send: no resampling; fps for Qwen3-VL's timestamps.
        meta = {"fps": fps, "total_num_frames": len(frames), "frames_indices": list(range(len(frames)))}
        out = processor(text=[prompt], videos=[frames], video_metadata=[meta], do_sample_frames=False,
                        return_tensors="pt")
    except Exception as exc:  # noqa: BLE001 - any processor failure is one line
        raise LaneError(f"the HF processor of {model} failed on the clip: "
                        f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from None
    missing = [k for k in ("input_ids", "pixel_values_videos", "video_grid_thw") if k not in out]
    if missing:
        raise LaneError(f"the HF processor of {model} returned no {missing} (keys: {sorted(out)})")
    return {"input_ids": [int(i) for i in out["input_ids"][0].tolist()],
            "video_data": [dict(out, format="processor_output")],
            "sampling_params": {"max_new_tokens": max_tokens, "temperature": 0}, "stream": True}


def read_stream(chunks, start: float, clock) -> tuple[str, float | None, dict]:
    """(text, time to first text, last meta_info) of Engine.generate(stream=True) chunks.

    Each chunk carries the whole text so far (upstream's default) or, with
    --incremental-streaming-output, only the new piece; both are joined the same way.
    """
    text, ttft, meta = "", None, {}
    for chunk in chunks:
        piece = chunk.get("text") or ""
        if piece and ttft is None:
            ttft = clock() - start
        text = piece if piece.startswith(text) else text + piece
        meta = chunk.get("meta_info") or meta
    return text, ttft, meta
