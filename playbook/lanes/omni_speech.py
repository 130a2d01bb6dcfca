#!/usr/bin/env python3
"""sglang-omni Qwen3-Omni speech output lane: first audio per chunk, RTF, speech WER and seam continuity.

Asks the thinker+talker pipeline to say a sentence with modalities ["text", "audio"] on
/v1/chat/completions (or streams raw PCM from /v1/audio/speech with --endpoint speech).
Each request gets a generated sentence of its own (_sentences), so the radix cache cannot
answer. Per request it records when every audio chunk arrived (first-audio latency,
playback stalls), scores continuity at each chunk join (_seams), and, with --asr-url, sends
the joined audio to a Qwen3-ASR transcription server and scores speech WER against the text
the talker was given. RTF is wall time over seconds of audio produced.

--launch runs `sgl-omni serve` in the sglang-omni checkout named by --omni-root (or
SGLANG_OMNI_ROOT), with a placement for --gpus 1, 2 or 3 (see PLACEMENTS) spelt for
--omni-version (default: the checkout's version, else the installed one, else the pin's).
"""

from __future__ import annotations

import base64
import functools
import json
import os
import re
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _audio import wav_bytes, wav_pcm  # noqa: E402
from _client import chat_call, chat_stream, http, sse_events, transcribe  # noqa: E402
from _lane import Call, Lane, LaneError, Sample  # noqa: E402
from _results import pct  # noqa: E402
from _runner import main  # noqa: E402
from _scoring import word_error_rate  # noqa: E402
from _seams import Chunk, stream_report  # noqa: E402
from _sentences import sentence  # noqa: E402
from _workload import slot  # noqa: E402

CLI = ["sgl-omni", "serve"]  # sglang-omni's CLI ([project.scripts] sgl-omni = sglang_omni.cli:app)
COLOCATED_CONFIG = "examples/configs/qwen3_omni_colocated_h200.yaml"
DEFAULT_RATE = 24000  # sglang_omni/client/audio.py DEFAULT_SAMPLE_RATE: chat audio chunks carry no rate
# How `sgl-omni serve` places stages changed with the release: up to 0.1.3 (the pinned commit
# 6419acb9 is 0.1.3) named flags (--thinker-tp-size, --thinker-gpus, --talker-gpu,
# --code2wav-gpu, --thinker-/--talker-mem-fraction-static); from 0.1.4 (read in the wheels
# 0.1.4-0.1.9) those flags are gone and every stage setting is a dotted override of the
# pipeline config, the stages. prefix implied (--thinker.tp_size 2, --talker_ar.gpu 1,
# --thinker.engine.mem_fraction_static 0.55); a list value is JSON ([0,1]).
DOTTED_SINCE = (0, 1, 4)
PIN_VERSION = "0.1.3"  # the spelling when no version is given or found: the knowledge base's pin
# Placements by GPU count, from sglang-omni at the pin 6419acb9 (facts, cited):
# 1: docs/basic_usage/qwen3_omni.md runs speech on one GPU with `sgl-omni serve --config
#    examples/configs/qwen3_omni_colocated_h200.yaml --colocate` ("on single-H200 workers").
# 2: thinker TP=2 on GPUs 0,1, the talker stacked on GPU 1 with the memory fractions of the CI's
#    TP=2 layout (tests/test_model/conftest.py: thinker 0.55, talker 0.21), and code2wav on the
#    thinker's GPU 0, where #1235 moved its default (the CI launcher still puts it on 1).
# 3: docs/_static/js/qwen3_omni_server_generator.js's "TP=2, 3 GPUs": thinker TP=2 on 0,1 and the
#    talker alone on GPU 2 (#1235: the talker is the heaviest speech stage, give it a GPU of its
#    own); code2wav on the thinker's GPU 0, passed explicitly since --thinker-gpus does not move it;
#    the memory budgets auto-sized, as docs/basic_usage/qwen3_omni.md advises.
PLACEMENTS = {
    1: "every stage colocated on GPU 0 (the H200 colocated config)",
    2: "thinker TP=2 on GPUs 0,1; talker on GPU 1; code2wav on the thinker's GPU 0 (thinker/talker memory 0.55/0.21)",
    3: "thinker TP=2 on GPUs 0,1; talker alone on GPU 2; code2wav on the thinker's GPU 0",
}


def version_tuple(text: str) -> tuple[int, ...]:
    """(0, 1, 9) from "0.1.9", "v0.1.9.post1" or "0.1.10rc0"; () when unreadable."""
    return tuple(int(m) for m in re.findall(r"\d+", text.lstrip("v").split("rc")[0].split(".post")[0])[:3])


def checkout_version(root: str | None) -> str | None:
    """The version an sglang-omni checkout declares (sglang_omni/__init__.py __version__), if readable."""
    try:
        with open(os.path.join(root, "sglang_omni", "__init__.py"), encoding="utf-8") as fh:
            m = re.search(r"^__version__\s*=\s*[\"']([^\"']+)[\"']", fh.read(), re.M)
    except (OSError, TypeError):
        return None
    return m.group(1) if m else None


@functools.cache  # once per process: dossier's lane interpreter runs every --dry-run in one
def installed_omni() -> str | None:
    """The sglang-omni version installed for this interpreter, if any (no import of it)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sglang-omni")
    except PackageNotFoundError:
        return None


def placement_flags(gpus: int, omni_version: str | None) -> list[str]:
    """The `sgl-omni serve` flags of a placement (PLACEMENTS), spelt for that sglang-omni version."""
    if gpus == 1:
        return ["--config", COLOCATED_CONFIG, "--colocate"]
    talker = "1" if gpus == 2 else "2"
    memory = [("thinker", "0.55"), ("talker", "0.21")] if gpus == 2 else []
    if omni_version and version_tuple(omni_version) >= DOTTED_SINCE:
        stage = {"thinker": "thinker", "talker": "talker_ar"}
        return (["--thinker.tp_size", "2", "--thinker.gpu", "[0,1]", "--talker_ar.gpu", talker, "--code2wav.gpu", "0"]
                + [w for role, value in memory for w in (f"--{stage[role]}.engine.mem_fraction_static", value)])
    return (["--thinker-tp-size", "2", "--thinker-gpus", "0,1", "--talker-gpu", talker, "--code2wav-gpu", "0"]
            + [w for role, value in memory for w in (f"--{role}-mem-fraction-static", value)])


def decode_chunk(chunk: bytes, rate: int) -> tuple[bytes, int]:
    """(16-bit PCM, rate) of one audio chunk: a WAV file per chunk, else raw 16-bit PCM at `rate`."""
    if chunk[:4] == b"RIFF":
        return wav_pcm(chunk)
    if not rate:
        raise LaneError("audio chunk is neither WAV nor PCM of a known rate; use a wav or pcm audio format")
    return chunk[: len(chunk) // 2 * 2], rate


class OmniSpeechLane(Lane):
    """sglang-omni Qwen3-Omni speech output (first audio per chunk, RTF, speech WER, seams)."""

    name = "omni-speech"
    repo = "sglang-omni"
    default_model = "Qwen/Qwen3-Omni-30B-A3B-Instruct"
    default_port = 8000
    default_served = "qwen3-omni"

    def add_arguments(self, p):
        p.add_argument("--endpoint", choices=("chat", "speech"), default="chat",
                       help="chat: /v1/chat/completions with audio output; speech: /v1/audio/speech stream=true (PCM).")
        p.add_argument("--sentence", default=None, help="Say this every request (default: a generated one each).")
        p.add_argument("--gpus", type=int, choices=sorted(PLACEMENTS), default=2,
                       help="GPUs --launch places the stages on (default: 2: thinker TP=2, talker on GPU 1).")
        p.add_argument("--omni-root", default=os.environ.get("SGLANG_OMNI_ROOT"),
                       help="sglang-omni checkout --launch runs from (default: $SGLANG_OMNI_ROOT).")
        p.add_argument("--omni-version", default=None,
                       help="sglang-omni version the placement flags are spelt for: named flags up to 0.1.3, "
                            "dotted stage overrides from 0.1.4 (default: the --omni-root checkout's version, "
                            f"else the installed one, else {PIN_VERSION}, the pin's).")
        p.add_argument("--asr-url", help="Qwen3-ASR server (or its /v1/audio/transcriptions URL) for speech WER.")
        p.add_argument("--asr-model", default="qwen3-asr", help="Model name sent to --asr-url.")
        p.add_argument("--max-wer", type=float, default=0.5, help="Text-vs-sentence WER limit (chat endpoint).")
        p.add_argument("--max-speech-wer", type=float, default=0.3, help="Speech WER limit (with --asr-url).")
        p.add_argument("--max-seam", type=float, default=4.0,
                       help="Fail when a chunk join's seam score is above this (at most about 1 when continuous).")
        p.add_argument("--min-audio", type=float, default=0.5, help="Fail when a reply has less audio (s).")
        p.set_defaults(max_tokens=128)

    def validate(self, args):
        if args.media_dir:
            raise LaneError("omni-speech generates its sentences; --media-dir does not apply")
        if args.launch and not args.server_cmd:
            root = args.omni_root
            if not root:
                raise LaneError("--launch needs --omni-root DIR (an sglang-omni checkout) or SGLANG_OMNI_ROOT")
            if not os.path.isfile(os.path.join(root, "sglang_omni", "cli", "serve.py")):
                raise LaneError(f"--omni-root {root} is not an sglang-omni checkout: no sglang_omni/cli/serve.py")
            if args.gpus == 1 and not os.path.isfile(os.path.join(root, COLOCATED_CONFIG)):
                raise LaneError(f"--gpus 1 needs {COLOCATED_CONFIG} in the checkout {root}")

    def omni_version(self, args) -> tuple[str, str]:
        """(version the flags are spelt for, where it came from)."""
        for version, source in ((args.omni_version, "--omni-version"),
                                (checkout_version(args.omni_root), "the --omni-root checkout"),
                                (installed_omni(), "the installed sglang-omni")):
            if version:
                return version, source
        return PIN_VERSION, "no version given or found: the pinned commit's"

    def server_command(self, args):
        common = ["--model-path", args.model, "--port", str(args.port), "--model-name", self.served(args)]
        return [*CLI, *common, *placement_flags(args.gpus, self.omni_version(args)[0])]

    def server_cwd(self, args):
        return os.path.abspath(args.omni_root) if args.omni_root else None

    def plan(self, args):
        where = self.server_cwd(args) or "(an sglang-omni checkout: pass --omni-root DIR or set SGLANG_OMNI_ROOT)"
        asr = (f"speech WER via {args.asr_url} (model {args.asr_model}) <= {args.max_speech_wer}" if args.asr_url
               else "speech WER not measured (pass --asr-url of a Qwen3-ASR server)")
        version, source = self.omni_version(args)
        return [f"cwd: {where}", f"placement: {args.gpus} GPU(s): {PLACEMENTS[args.gpus]}; "
                                 f"flags spelt for sglang-omni {version} ({source})",
                f"quality: {asr}; seam score <= {args.max_seam} at every chunk join"]

    def media(self, args) -> str:
        if args.sentence or args.repeat_media:
            why = "--sentence" if args.sentence else "--repeat-media"
            return f"no media; the same sentence every request ({why}): the radix cache can answer"
        return f"no media; a generated sentence per request (seed {args.seed}): the radix cache cannot answer"

    def _sentence(self, args, index):
        return args.sentence or sentence(args.seed, slot(args, index)).capitalize() + "."

    def describe(self, args):
        said = repr(args.sentence) if args.sentence else "a generated sentence per request, e.g. " + repr(
            self._sentence(args, 0))
        if args.endpoint == "speech":
            return [f"POST /v1/audio/speech stream=true response_format=pcm: input {said}; "
                    "raw 16-bit PCM body, rate in X-Sample-Rate"]
        return [f"POST /v1/chat/completions stream=true modalities=[text, audio] audio.format=wav: "
                f"'Repeat exactly: ...' with {said}; text WER <= {args.max_wer}, audio >= {args.min_audio}s"]

    def prepare(self, args, workdir):
        self.streams: dict[int, tuple[list[Chunk], str]] = {}  # request index -> (chunks, text the talker got)
        self.lock = threading.Lock()

    def calls(self, args, index):
        said = self._sentence(args, index)
        if args.endpoint == "speech":
            # sglang-omni streams speech only as raw PCM (speech_service: stream=true requires pcm).
            return [Call("speech", path="/v1/audio/speech", body={
                "model": self.served(args), "input": said, "voice": "default",
                "response_format": "pcm", "stream": True})]
        return [chat_call(self.served(args), f"Repeat exactly this sentence and nothing else: {said}",
                          args, modalities=["text", "audio"], audio={"format": "wav"})]

    def send(self, args, base, index):
        said, call = self._sentence(args, index), self.calls(args, index)[0]
        if args.endpoint == "speech":
            chunks, latency = self._speech(args, base, call)
            text, ttft, spoken = "", None, said
        else:
            res = chat_stream(base, call.body, args.timeout)
            chunks = [Chunk(at, *decode_chunk(base64.b64decode(c), DEFAULT_RATE))
                      for at, c in zip(res["audio_at"], res["audio_b64"])]
            if len(chunks) > 2 and chunks[-1].pcm == b"".join(c.pcm for c in chunks[:-1]):
                chunks.pop()  # a final aggregate of the streamed audio (non-streaming fallback), not new audio
            text, ttft, latency, spoken = res["text"], res["ttft"], res["latency"], res["text"] or said
        if len({c.rate for c in chunks}) > 1:
            raise LaneError(f"audio chunks changed sample rate mid-stream: {sorted({c.rate for c in chunks})}")
        with self.lock:
            self.streams[index] = (chunks, spoken)
        seconds = sum(c.seconds for c in chunks)
        wer = word_error_rate(said, text) if args.endpoint == "chat" else 0.0
        ok = wer <= args.max_wer and seconds >= args.min_audio
        return Sample(latency, text, ttft=ttft, ttfa=chunks[0].at if chunks else None, audio_seconds=seconds or None,
                      ok=ok, detail="" if ok else f"text WER {wer:.2f}, {seconds:.2f}s of audio",
                      extra={"sentence": said, "audio_chunks": len(chunks)})

    def _speech(self, args, base, call):
        """Stream /v1/audio/speech: raw PCM (X-Sample-Rate header), or SSE audio events from older servers."""
        body = json.dumps(call.body).encode()
        start, chunks = time.perf_counter(), []
        with http("POST", base + call.path, body, {"Content-Type": "application/json"}, args.timeout) as resp:
            if "text/event-stream" in resp.headers.get("Content-Type", ""):
                for at, event in sse_events(resp):
                    audio = event.get("audio") or {}
                    if audio.get("data"):
                        chunks.append(Chunk(at - start, *decode_chunk(base64.b64decode(audio["data"]),
                                                                      audio.get("sample_rate") or DEFAULT_RATE)))
            else:
                rate, carry = int(resp.headers.get("X-Sample-Rate") or DEFAULT_RATE), b""
                while piece := resp.read1(1 << 16):  # one read per HTTP chunk as it arrives
                    data, carry = carry + piece, b""
                    if len(data) % 2:
                        data, carry = data[:-1], data[-1:]
                    chunks.append(Chunk(time.perf_counter() - start, data, rate))
        return chunks, time.perf_counter() - start

    def check(self, args, samples):
        ok, message, extra = super().check(args, samples)
        measured = sorted(i for i in self.streams if i >= 0)
        reports = [stream_report(self.streams[i][0]) for i in measured]
        for sample, report in zip(samples, reports):
            sample.extra.update(report)
        seams = [(r["seam_worst"], i, r["seam_worst_join"]) for i, r in zip(measured, reports) if r["joins"]]
        extra["stalls"] = sum(r["stalls"] for r in reports)
        gaps = [b - a for r in reports for a, b in zip(r["chunk_at_s"], r["chunk_at_s"][1:])]
        if gaps:  # time between audio chunks: what a player must bridge after the first one
            extra["chunk_gap_p50_s"], extra["chunk_gap_p90_s"] = round(pct(gaps, 0.5), 4), round(pct(gaps, 0.9), 4)
        if seams:
            worst = max(seams)
            extra["seam_worst"] = worst[0]
            if ok and worst[0] > args.max_seam:
                ok, message = False, (f"seam score {worst[0]:.1f} above --max-seam {args.max_seam} at join "
                                      f"{worst[2]} of request {worst[1]}: a discontinuity between audio chunks")
        if args.asr_url:
            speech_wer, worst = self._speech_wer(args, measured)
            extra["speech_wer"] = round(speech_wer, 4)
            if ok and speech_wer > args.max_speech_wer:
                ok, message = False, (f"speech WER {speech_wer:.3f} above --max-speech-wer {args.max_speech_wer}: "
                                      f"the audio of {worst[0]!r} was heard as {worst[1]!r}")
        if ok:
            message += (f"; worst seam {extra.get('seam_worst', 'n/a')}"
                        + (f", speech WER {extra['speech_wer']:.3f}" if args.asr_url else ", speech WER not measured"))
        return ok, message, extra

    def _speech_wer(self, args, measured):
        """Corpus WER of the ASR transcripts of every reply's joined audio; (wer, (worst reference, heard))."""
        refs, hyps = [], []
        for i in measured:
            chunks, spoken = self.streams[i]
            if not chunks:
                continue
            pcm = b"".join(c.pcm for c in chunks)
            with transcribe(args.asr_url, args.asr_model, wav_bytes(pcm, chunks[0].rate), args.timeout) as resp:
                raw = resp.read()
            try:
                heard = json.loads(raw)["text"]
            except (json.JSONDecodeError, KeyError, TypeError):
                raise LaneError(f"--asr-url reply has no 'text': {raw[:120]!r}") from None
            refs.append(spoken)
            hyps.append(heard)
        if not refs:
            return 1.0, ("(no audio)", "")
        worst = max(zip(refs, hyps), key=lambda rh: word_error_rate(*rh))
        return word_error_rate(" ".join(refs), " ".join(hyps)), worst

    def passed(self, args, samples):
        return f"all {len(samples)} replies carried audio (>= {args.min_audio}s) and the sentence"


if __name__ == "__main__":
    sys.exit(main(OmniSpeechLane()))
