"""What the Qwen3-ASR lanes share: the server command, the clips, the upload and the WER check.

Clips are spoken by espeak-ng: per request, generated sentences (_sentences) joined with
short pauses until --clip-seconds is reached, so no two requests share audio or text.
Without espeak-ng the lanes refuse to run: WER on a tone says nothing. Real recordings come
from --media-dir (NAME.txt beside each file is its transcript) or --audio/--reference.
"""

from __future__ import annotations

import threading

from _audio import Speech, silence, synthesize, synthesizer, wav_bytes
from _client import TRANSCRIPTIONS, http, multipart
from _lane import Call, Lane, LaneError
from _scoring import word_error_rate
from _sentences import PER_CLIP, clip_sentence
from _workload import media_files, pick, rng, slot

RATE = 16000
MAX_CLIP_SECONDS = 120.0
PAUSE_SECONDS = 0.3  # between sentences of one clip
NO_SPEECH = ("cannot synthesize speech: espeak-ng is not on PATH (apt-get install espeak-ng), and WER on a "
             "tone means nothing; or pass --media-dir DIR of recordings with NAME.txt transcripts")


def clip_range(value: str | None) -> tuple[float, float] | None:
    """--clip-seconds: "30" or "10-60" (seconds, at most 120); None when not given."""
    if not value:
        return None
    try:
        lo, _, hi = value.partition("-")
        low, high = float(lo), float(hi or lo)
    except ValueError:
        raise LaneError(f"--clip-seconds {value!r}: expected seconds (30) or a range (10-60)") from None
    if not 0 < low <= high <= MAX_CLIP_SECONDS:
        raise LaneError(f"--clip-seconds {value!r}: need 0 < low <= high <= {MAX_CLIP_SECONDS:g}")
    return low, high


class AsrLane(Lane):
    repo = "sglang"
    default_model = "Qwen/Qwen3-ASR-1.7B"
    default_served = "qwen3-asr"

    def add_arguments(self, p):
        p.add_argument("--audio", dest="audio_file", help="One WAV to send every request (needs --reference).")
        p.add_argument("--reference", help="Reference transcript for --audio.")
        p.add_argument("--clip-seconds", metavar="S|LO-HI",
                       help="Clip length in seconds, fixed (30) or drawn per request (10-60), at most 120; "
                            "clips are generated sentences joined until the length is reached "
                            "(default: one sentence, about 5 s).")
        p.add_argument("--language", default=None, help="Language hint sent with the request (e.g. English).")
        p.add_argument("--max-wer", type=float, default=0.2, help="Fail when corpus WER is above this.")

    def validate(self, args):
        clip_range(args.clip_seconds)
        if args.audio_file and not args.reference:
            raise LaneError("--audio needs --reference (its transcript): WER needs the words spoken")
        if args.audio_file and args.media_dir:
            raise LaneError("pass --audio or --media-dir, not both")
        if args.clip_seconds and (args.audio_file or args.media_dir):
            raise LaneError("--clip-seconds shapes generated speech; it does not apply to --audio or --media-dir")

    def server_command(self, args):
        return super().server_command(args) + ["--served-model-name", self.served(args), "--trust-remote-code"]

    def prepare(self, args, workdir):
        """Every clip the run will send, built before the server starts (client work is not measured)."""
        self.clips: dict[int, Speech] = {}
        self.lock = threading.Lock()
        if args.audio_file:
            self.fixed = Speech(_read(args.audio_file), args.reference, "file")
            return
        self.fixed = None
        if args.media_dir:
            self.files = media_files(args.media_dir, "audio")
            missing = [f.name for f in self.files if not f.expected]
            if missing:
                raise LaneError(f"--media-dir: no transcript for {missing[0]} (write the words spoken to "
                                f"{missing[0].rsplit('.', 1)[0]}.txt beside it)"
                                + (f" and {len(missing) - 1} more" if len(missing) > 1 else ""))
            return
        self.tool = synthesizer()
        if not self.tool:
            raise LaneError(NO_SPEECH)
        self.spoken: dict[str, bytes] = {}
        slots = sorted({slot(args, i) for i in range(-args.warmup, args.requests)})
        from concurrent.futures import ThreadPoolExecutor  # only when clips are spoken, not on a --dry-run

        with ThreadPoolExecutor(max_workers=4) as pool:  # espeak-ng runs are separate processes
            for media_slot, clip in zip(slots, pool.map(lambda s: self._generate(args, s), slots)):
                self.clips[media_slot] = clip

    def _sentence_pcm(self, text: str) -> bytes:
        with self.lock:
            if text in self.spoken:
                return self.spoken[text]
        pcm = synthesize(self.tool, text, RATE)
        with self.lock:
            self.spoken[text] = pcm
        return pcm

    def _generate(self, args, media_slot: int) -> Speech:
        """One clip: sentences for this slot, joined with pauses, then padded with silence to the target."""
        bounds = clip_range(args.clip_seconds)
        target = round(rng(args, media_slot, "clip").uniform(*bounds), 1) if bounds else 0.0
        texts, pcm, gap = [], b"", silence(PAUSE_SECONDS, RATE)
        for k in range(PER_CLIP):
            text = clip_sentence(args.seed, media_slot, k)
            joined = pcm + gap + self._sentence_pcm(text) if pcm else self._sentence_pcm(text)
            if texts and len(joined) / 2 / RATE > target:
                break  # the next sentence would run over: pad with silence instead
            texts.append(text)
            pcm = joined
            if len(pcm) / 2 / RATE >= target:
                break
        pcm += b"\x00\x00" * max(round(target * RATE) - len(pcm) // 2, 0)  # silence up to the exact length
        reference = " ".join(texts)
        return Speech(wav_bytes(pcm, RATE, reference), reference, self.tool)

    def clip(self, args, index: int) -> Speech:
        if self.fixed:
            return self.fixed
        if args.media_dir:
            f = pick(self.files, args, index)
            return Speech(f.read(), f.expected, "file", f.name, f.mime)
        return self.clips[slot(args, index)]

    def transcription_call(self, args, clip: Speech, **fields) -> Call:
        """The multipart /v1/audio/transcriptions request for one clip."""
        fields = {"model": self.served(args), "response_format": "json", **fields}
        if args.language:
            fields["language"] = args.language
        return Call("transcription", path=TRANSCRIPTIONS, body=fields,
                    files={"file": (clip.filename, clip.wav, clip.mime)})

    def transcribe(self, args, base: str, call: Call):
        """POST a transcription Call (multipart); the open response."""
        body, ctype = multipart(call.body, call.files)
        return http("POST", base + call.path, body, {"Content-Type": ctype}, args.timeout)

    def describe_audio(self, args) -> str:
        if args.audio_file:
            return f"{args.audio_file} every request (reference {args.reference!r})"
        if args.media_dir:
            return f"recordings from {args.media_dir} with NAME.txt transcripts"
        length = f"{args.clip_seconds} s clips of joined sentences" if args.clip_seconds else "one sentence per clip"
        return (f"espeak-ng speech at {RATE} Hz, {length}, generated sentences (seed {args.seed}"
                f"{', the same clip every request' if args.repeat_media else ', distinct per request'}); "
                "refuses to run without espeak-ng")

    def check(self, args, samples):
        refs = [s.extra["reference"] for s in samples]
        hyps = [s.output for s in samples]
        wer = word_error_rate(" ".join(refs), " ".join(hyps))
        source = "file" if (args.audio_file or args.media_dir) else self.tool
        seconds = [s.audio_seconds for s in samples if s.audio_seconds]
        extra = {"wer": round(wer, 4), "speech_source": source}
        if seconds:
            extra["clip_seconds_mean"] = round(sum(seconds) / len(seconds), 2)
        if wer > args.max_wer:
            worst = max(samples, key=lambda s: word_error_rate(s.extra["reference"], s.output))
            return False, (f"WER {wer:.3f} above --max-wer {args.max_wer}: expected "
                           f"{worst.extra['reference'][:100]!r}, got {worst.output[:100]!r}"), extra
        return True, f"WER {wer:.3f} <= {args.max_wer} over {len(samples)} clips (speech: {source})", extra


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise LaneError(f"{path}: {exc.strerror}") from None
