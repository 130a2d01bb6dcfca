"""Transformers reference modules at real sizes with random weights (no checkpoint).

Only the architecture is borrowed; weights are random, so outputs mean nothing
and only shapes, time and memory count. `quick` shrinks every model for a CPU
smoke run.
"""
from __future__ import annotations

import torch


def _init(model: torch.nn.Module, device, dtype) -> torch.nn.Module:
    return model.to(device=device, dtype=dtype).eval()


def window_tokens(cfg) -> int:
    """Audio-encoder tokens in one attention window: 13 tokens per 100 mel frames, n_window_infer frames."""
    return 13 * (cfg.n_window_infer // (2 * cfg.n_window))


def audio_layer_stack(encoder, x: torch.Tensor, head: bool = False) -> torch.Tensor:
    """The audio encoder's transformer layers over whole attention windows, x [windows, W, d_model],
    with no host sync (the windows are equal, so attention is one batched SDPA call): the part the
    layer-stack CUDA graphs capture. head=True adds ln_post, proj1, act, proj2 (Qwen3-ASR's graph)."""
    import torch.nn.functional as F

    n, w, d = x.shape
    for layer in encoder.layers:
        attn = layer.self_attn
        h = layer.self_attn_layer_norm(x)
        q, k, v = (proj(h).view(n, w, attn.num_heads, -1).transpose(1, 2)
                   for proj in (attn.q_proj, attn.k_proj, attn.v_proj))
        a = F.scaled_dot_product_attention(q, k, v, scale=attn.scaling).transpose(1, 2).reshape(n, w, d)
        x = x + attn.out_proj(a)
        x = x + layer.fc2(layer.activation_fn(layer.fc1(layer.final_layer_norm(x))))
    if head:
        x = encoder.proj2(encoder.act(encoder.proj1(encoder.ln_post(x))))
    return x


def capture(fn, static: torch.Tensor, warmup: int = 3):
    """Capture fn(static) as a CUDA graph after warm-up on a side stream: (graph, static output)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s), torch.no_grad():
        for _ in range(warmup):
            fn(static)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph), torch.no_grad():
        out = fn(static)
    return graph, out


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
    with torch.device(device):  # random init on the GPU: seconds, not a minute of CPU time
        model = Qwen3VLVisionModel._from_config(cfg)
    return _init(model, device, dtype), cfg


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
    with torch.device(device):
        model = Qwen3OmniMoeAudioEncoder._from_config(cfg)
    return _init(model, device, dtype), cfg


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
    with torch.device(device):
        model = Qwen3OmniMoeCode2Wav._from_config(cfg)
    return _init(model, device, dtype), cfg
