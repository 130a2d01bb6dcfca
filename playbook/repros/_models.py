"""Transformers reference modules at real sizes with random weights (no checkpoint).

Only the architecture is borrowed; weights are random, so outputs mean nothing
and only shapes, time and memory count. `quick` shrinks every model for a CPU
smoke run.
"""
from __future__ import annotations

import torch


def _init(model: torch.nn.Module, device, dtype) -> torch.nn.Module:
    return model.to(device=device, dtype=dtype).eval()


def qwen3_vl_vision(device, dtype, depth: int | None = None, quick: bool = False):
    """Qwen3-VL's vision tower (the Qwen3-Omni image encoder shares it): 27 blocks of 1152."""
    from transformers.models.qwen3_vl.configuration_qwen3_vl import Qwen3VLVisionConfig
    from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLVisionModel

    kw = {"depth": depth} if depth else {}
    if quick:
        kw = {"depth": 2, "hidden_size": 64, "intermediate_size": 128, "num_heads": 2, "out_hidden_size": 64,
              "deepstack_visual_indexes": [0]}
    cfg = Qwen3VLVisionConfig(**kw)
    cfg._attn_implementation = "sdpa"
    return _init(Qwen3VLVisionModel._from_config(cfg), device, dtype), cfg


def vision_output(out) -> torch.Tensor:
    if isinstance(out, torch.Tensor):
        return out
    if getattr(out, "pooler_output", None) is not None:
        return out.pooler_output
    return out[0]


def audio_encoder(device, dtype, asr: bool = False, quick: bool = False):
    """Qwen3-Omni's audio encoder (32 layers of 1280), or Qwen3-ASR-1.7B's (24 layers of 1024)."""
    from transformers.models.qwen3_omni_moe.configuration_qwen3_omni_moe import Qwen3OmniMoeAudioEncoderConfig
    from transformers.models.qwen3_omni_moe.modeling_qwen3_omni_moe import Qwen3OmniMoeAudioEncoder

    kw = {}
    if asr:
        kw = {"encoder_layers": 24, "d_model": 1024, "encoder_attention_heads": 16, "encoder_ffn_dim": 4096,
              "output_dim": 2048}
    if quick:
        kw = {"encoder_layers": 2, "d_model": 64, "encoder_attention_heads": 2, "encoder_ffn_dim": 128,
              "output_dim": 64, "downsample_hidden_size": 16}
    cfg = Qwen3OmniMoeAudioEncoderConfig(**kw)
    cfg._attn_implementation = "sdpa"
    return _init(Qwen3OmniMoeAudioEncoder._from_config(cfg), device, dtype), cfg


def encode_audio(model, mels: list[torch.Tensor]) -> torch.Tensor:
    """One encoder call over several clips: mel [128, frames] each, concatenated along time."""
    feats = torch.cat(mels, dim=1)
    lens = torch.tensor([m.shape[1] for m in mels], dtype=torch.long, device=feats.device)
    return model(input_features=feats, feature_lens=lens).last_hidden_state


def code2wav(device, dtype, quick: bool = False):
    """Qwen3-Omni's Code2Wav vocoder: 16 codebooks at 12.5 Hz -> 24 kHz (1920 samples a frame)."""
    from transformers.models.qwen3_omni_moe.configuration_qwen3_omni_moe import Qwen3OmniMoeCode2WavConfig
    from transformers.models.qwen3_omni_moe.modeling_qwen3_omni_moe import Qwen3OmniMoeCode2Wav

    kw = {}
    if quick:
        kw = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
              "num_key_value_heads": 2, "decoder_dim": 32}
    cfg = Qwen3OmniMoeCode2WavConfig(**kw)
    cfg._attn_implementation = "sdpa"
    return _init(Qwen3OmniMoeCode2Wav._from_config(cfg), device, dtype), cfg
