"""sglang-omni#1237: upstream's own Code2Wav graph runner and window plan (sglang-omni 0.1.9), measured.

Runs sglang-omni 0.1.9's code, installed from the released wheel beside sglang 0.5.22
(the version 0.1.9 pins; sglang 0.5.23 fails at `from sglang.kernels.ops.layernorm
import rmsnorm`): `Qwen3OmniCode2Wav` with channels-last convolutions and the Triton
fused SnakeBeta, `Code2WavCudaGraphRunner` (capture, equivalence check, replay), and
the scheduler's window arithmetic (`serial_window_frames`, `window_graph_keys`) with
and without `initial_chunk_frames`. Random weights at full size. The pre-transformer
stays transformers' (SDPA): `use_fused_transformer` needs sglang-kernel's FA3
(flash_ops.abi3.so, 1.1 GB unpacked), not carried. Measured:

- eager against the runner's replay for the shapes the dispatcher produces (B1 at
  every threshold window of both plans, B2/4/8 at the default plan's windows);
- bucket hit rate of the capture plan the factory builds (threshold keys for 1-8 rows
  plus B1 final-window keys), default chunking and initial_chunk_frames=4, over a
  seeded trace of streams batched by a seeded group size; with #1101's B1/T{10,20,30,35}
  plan beside it; counts of replays, rows per replay and fallbacks;
- time to first audio against the first-chunk setting: frames waited x an assumed
  talker frame time (--talker-frame-ms; modelled, no talker runs) + the timed replay
  of that first window;
- the first chunk's and the joins' error against a one-shot decode, streamed the way
  the scheduler slices (last new x 1920 samples of each window).

If upstream's modules do not import, the record says why and the same measurements
run on our reimplementation (transformers' Code2Wav, plain CUDA graphs, our window walk).
"""
import importlib.metadata as md
import random
import sys
import traceback
from collections import Counter
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as H  # noqa: E402
import _models as M  # noqa: E402

SUBJECT = "sglang-omni#1237"
TECHNIQUE = "replay upstream's captured Code2Wav graphs for the dispatcher's window shapes instead of eager decode"
MODELLED = ("before_ms", "after_ms")  # the TTFA rows add an assumed talker time to a timed replay
CHUNK, CTX, ROWS = 10, 25, 8


def load_upstream():
    """(modules, versions) of upstream's code, or (None, the import error's last lines)."""
    try:
        from sglang_omni.models.qwen3_omni.components import code2wav_scheduler as sched
        from sglang_omni.models.qwen3_omni.components.code2wav import Qwen3OmniCode2Wav
        from sglang_omni.models.qwen3_omni.components.code2wav_cuda_graph import Code2WavCudaGraphRunner, GraphKey
        from sglang_omni.utils.snake_beta import fuse_vocoder_decoder
    except Exception as exc:  # noqa: BLE001 - the record says exactly what stopped it
        tail = traceback.format_exception(exc)[-3:]
        return None, "".join(tail).strip()
    versions = {}
    for dist in ("sglang-omni", "sglang"):
        try:
            versions[dist] = md.version(dist)
        except md.PackageNotFoundError:
            versions[dist] = None
    return {"sched": sched, "model": Qwen3OmniCode2Wav, "runner": Code2WavCudaGraphRunner, "key": GraphKey,
            "fuse": fuse_vocoder_decoder}, versions


def our_serial_frames(chunk, ctx, initial=0):
    """Our walk of the threshold windows: first window of `initial` (or a chunk), context growing to ctx."""
    out, emitted = [], 0
    while True:
        step = initial if emitted == 0 and initial else chunk
        window = min(ctx, emitted) + step
        if window not in out:
            out.append(window)
        emitted += step
        if window == ctx + chunk:
            return tuple(out)


def plan(up, initial):
    """The factory's capture plan (no codec slots): threshold keys for 1..ROWS rows + B1 final windows."""
    if up:
        keys = up["sched"].window_graph_keys(CHUNK, CTX, ROWS, initial)
        keys = {(k.batch_size, k.frames) for k in keys}
    else:
        keys = {(r, f) for r in range(1, ROWS + 1) for f in our_serial_frames(CHUNK, CTX, initial)}
    return keys | {(1, f) for f in range(1, CTX + CHUNK + 1)}


def trace(initial, streams=400, seed=0):
    """(group size, window frames) of each ready group a dispatcher sees over seeded streams."""
    rng = random.Random(seed)
    out = []
    for _ in range(streams):
        total, emitted = max(8, int(rng.lognormvariate(4.8, 0.6))), 0
        while emitted < total:
            new = min(initial if emitted == 0 and initial else CHUNK, total - emitted)
            group = 1 + min(ROWS - 1, int(rng.expovariate(1 / 1.5)))
            out.append((group, min(CTX, emitted) + new))
            emitted += new
    return out


def dispatch(groups, keys):
    """Replays as the scheduler forms them: the largest captured row count within the group, else eager B1."""
    replays, rows, misses = 0, 0, Counter()
    for group, frames in groups:
        sizes = sorted((b for b, f in keys if f == frames), reverse=True)
        left = group
        while left:
            size = next((s for s in sizes if s <= left), None)
            if size is None:
                misses[f"B1/T{frames}"] += 1
                left -= 1
                continue
            replays += 1
            rows += size
            left -= size
    calls = replays + sum(misses.values())
    return {"calls": calls, "hit_rate": replays / calls, "rows_per_replay": rows / max(replays, 1),
            "fallbacks": dict(misses.most_common(6))}


def main():
    args = H.parse_args(__doc__, lambda p: p.add_argument("--talker-frame-ms", type=float, default=20.0,
                                                          help="assumed talker time per codec frame (TTFA model input)"))
    dev, dt = H.device(), H.dtype()
    up, info = load_upstream()
    upstream = ({"ran": "sglang-omni " + str(info.get("sglang-omni")) + " with sglang " + str(info.get("sglang")),
                 "modules": ["components.code2wav.Qwen3OmniCode2Wav (channels last, fused SnakeBeta)",
                             "components.code2wav_cuda_graph.Code2WavCudaGraphRunner",
                             "components.code2wav_scheduler.serial_window_frames / window_graph_keys"],
                 "not_run": "use_fused_transformer: needs sglang-kernel's FA3 (flash_ops.abi3.so, 1.1 GB unpacked)"}
                if up else {"ran": None, "import_error": info})
    technique = TECHNIQUE if up else (
        "ours, following #1237's buckets and initial_codec_chunk_frames (upstream's code did not import: "
        + info.splitlines()[-1] + "): replay captured Code2Wav graphs instead of eager decode")
    cfg_model, cfg = M.code2wav(dev, dt, quick=args.quick)
    if up:
        with torch.device(dev):
            model = up["model"]._from_config(cfg)
        model = model.to(dev, dt).eval()
        model.load_state_dict(cfg_model.state_dict())
        if torch.cuda.is_available():
            model.use_channels_last()
            up["fuse"](model.decoder)
        del cfg_model
    else:
        model = cfg_model
    frames0 = up["sched"].serial_window_frames(CHUNK, CTX, 0) if up else our_serial_frames(CHUNK, CTX)
    frames4 = up["sched"].serial_window_frames(CHUNK, CTX, 4) if up else our_serial_frames(CHUNK, CTX, 4)
    timed = [(1, f) for f in sorted(set(frames0) | set(frames4) | {2, 8})] + \
        [(b, f) for b in (2, 4, 8) for f in frames0]
    cases = []
    replay_ms = {}
    if torch.cuda.is_available():
        if up:
            keys = tuple(up["key"](batch_size=b, frames=f) for b, f in timed)
            params = sum(t.nbytes for t in list(model.parameters()) + list(model.buffers()))
            runner = up["runner"].build(model, device=dev if dev.index is not None else torch.device("cuda", 0),
                                        num_quantizers=int(cfg.num_quantizers), total_gpu_memory_fraction=0.9,
                                        graph_keys=keys, model_footprint_bytes=params, decode_stream=None)
            upstream["runner_enabled"] = bool(runner.enabled)
            upstream["runner_disable_reason"] = runner.disable_reason
            upstream["published_graphs"] = len(runner.graphs)
            run = lambda c: runner.run(c).output  # noqa: E731
        else:
            graphs = {}
            for b, f in timed:
                static = torch.zeros(b, cfg.num_quantizers, f, dtype=torch.long, device=dev)
                graphs[(b, f)] = (static, *M.capture(model, static))

            def run(c):
                static, graph, out = graphs[(c.shape[0], c.shape[2])]
                static.copy_(c)
                graph.replay()
                return out
        for b, f in timed:
            codes = torch.randint(0, cfg.codebook_size, (b, cfg.num_quantizers, f), device=dev)
            with torch.inference_mode():
                eager = H.timeit(lambda: model(codes), args.iters, args.warmup)
                rep = H.timeit(lambda: run(codes), args.iters, args.warmup)
                err = H.max_abs_err(model(codes), run(codes))
            replay_ms[(b, f)] = rep
            cases.append(H.case(f"B{b}/T{f}", {"batch": b, "frames": f}, eager, rep, err=err))
        if up:
            upstream["runtime"] = runner.stats()["runtime"]
    for name, initial, keys in (("default chunking, factory plan", 0, plan(up, 0)),
                                ("initial_chunk_frames=4, factory plan", 4, plan(up, 4)),
                                ("initial_chunk_frames=4, default plan", 4, plan(up, 0)),
                                ("default chunking, #1101 plan B1/T{10,20,30,35}", 0,
                                 {(1, 10), (1, 20), (1, 30), (1, 35)})):
        d = dispatch(trace(initial), keys)
        cases.append(H.case(f"hit rate: {name}", {"initial_chunk_frames": initial, "keys": len(keys)}, None, None,
                            **d))
    if replay_ms:
        first = {n: replay_ms[(1, n)] for n in (10, 8, 4, 2)}
        ttfa = lambda n: {k: n * args.talker_frame_ms + first[n][k] for k in ("median", "p10", "p90")}  # noqa: E731
        for n in (8, 4, 2):
            cases.append(H.case(f"TTFA model: first chunk 10 -> {n} frames", {
                "first_chunk_before": 10, "first_chunk_after": n, "assumed_talker_frame_ms": args.talker_frame_ms},
                ttfa(10), ttfa(n), first_replay_ms_after=first[n]["median"], first_replay_ms_before=first[10]["median"],
                modelled={"before_ms": f"10 frames x {args.talker_frame_ms} ms assumed talker time + timed replay",
                          "after_ms": f"{n} frames x {args.talker_frame_ms} ms assumed talker time + timed replay"}))
        g = torch.Generator().manual_seed(0)
        codes = torch.randint(0, cfg.codebook_size, (1, cfg.num_quantizers, 110), generator=g).to(dev)
        with torch.inference_mode():
            one = model(codes)
            upf = int(model.total_upsample)
            for initial in (0, 4):
                parts, emitted = [], 0
                while emitted < codes.shape[-1]:
                    new = min(initial if emitted == 0 and initial else CHUNK, codes.shape[-1] - emitted)
                    c = min(CTX, emitted)
                    parts.append(model(codes[..., emitted - c:emitted + new])[..., -new * upf:])
                    emitted += new
                wav = torch.cat(parts, -1)
                n = min(wav.shape[-1], one.shape[-1])
                diff = (wav[..., :n].float() - one[..., :n].float()).abs()
                joins = [sum(p.shape[-1] for p in parts[:i + 1]) for i in range(len(parts) - 1)]
                cases.append(H.case(f"seam: first chunk {initial or CHUNK}, then {CHUNK} (ctx {CTX})",
                                    {"frames": 110, "first_chunk": initial or CHUNK, "chunk": CHUNK, "left_context": CTX},
                                    None, None, err=float(diff.max()),
                                    first_chunk_max_abs_err=float(diff[..., :joins[0]].max()),
                                    max_abs_err_near_joins=max(float(diff[..., max(0, j - 240):j + 240].max())
                                                               for j in joins),
                                    mean_abs_err=float(diff.mean()), joins=len(joins),
                                    missing_samples=int(one.shape[-1] - wav.shape[-1])))
    H.summary(cases)
    H.emit(__file__, SUBJECT, technique, cases, args, upstream=upstream)


if __name__ == "__main__":
    main()
