"""What the Qwen3-ASR lanes share: the server command, the clips, the upload and the WER check."""

from __future__ import annotations

from _audio import Speech, speech
from _client import http, multipart
from _lane import Call, Lane
from _scoring import word_error_rate

SENTENCES = [
    "the quick brown fox jumps over the lazy dog",
    "please call stella and ask her to bring these things with her from the store",
    "we will meet at the station at half past nine tomorrow morning",
    "a large language model turns speech into text one chunk at a time",
]


class AsrLane(Lane):
    repo = "sglang"
    default_model = "Qwen/Qwen3-ASR-1.7B"
    default_served = "qwen3-asr"

    def add_arguments(self, p):
        p.add_argument("--audio", dest="audio_file", help="WAV to transcribe (default: espeak-ng sentences, else a tone).")
        p.add_argument("--reference", help="Reference transcript for --audio.")
        p.add_argument("--language", default=None, help="Language hint sent with the request (e.g. English).")
        p.add_argument("--max-wer", type=float, default=0.2, help="Fail when corpus WER is above this.")

    def server_command(self, args):
        return super().server_command(args) + ["--served-model-name", self.served(args), "--trust-remote-code"]

    def prepare(self, args, workdir):
        texts = [None] if args.audio_file else SENTENCES
        self.clips: list[Speech] = [speech(t or "", args.audio_file, args.reference) for t in texts]

    def clip(self, index: int) -> Speech:
        return self.clips[index % len(self.clips)]

    def transcription_call(self, args, clip: Speech, **fields) -> Call:
        """The multipart /v1/audio/transcriptions request for one clip."""
        fields = {"model": self.served(args), "response_format": "json", **fields}
        if args.language:
            fields["language"] = args.language
        return Call("transcription", path="/v1/audio/transcriptions", body=fields,
                    files={"file": ("audio.wav", clip.wav, "audio/wav")})

    def transcribe(self, args, base: str, call: Call):
        """POST a transcription Call (multipart); the open response."""
        body, ctype = multipart(call.body, call.files)
        return http("POST", base + call.path, body, {"Content-Type": ctype}, args.timeout)

    def describe_audio(self, args) -> str:
        if args.audio_file:
            return f"{args.audio_file} (reference {args.reference!r})"
        return f"{len(SENTENCES)} espeak-ng sentences as 16 kHz WAV (a tone with a known transcript if espeak-ng is absent)"

    def check(self, args, samples):
        refs = [s.extra["reference"] for s in samples]
        hyps = [s.output for s in samples]
        wer = word_error_rate(" ".join(refs), " ".join(hyps))
        source = self.clips[0].source
        extra = {"wer": round(wer, 4), "speech_source": source}
        if wer > args.max_wer:
            hint = ("; the fallback tone is not speech: install espeak-ng or pass --audio/--reference"
                    if source == "tone" else "")
            worst = max(samples, key=lambda s: word_error_rate(s.extra["reference"], s.output))
            return False, (f"WER {wer:.3f} above --max-wer {args.max_wer}: expected "
                           f"{worst.extra['reference']!r}, got {worst.output[:100]!r}{hint}"), extra
        return True, f"WER {wer:.3f} <= {args.max_wer} over {len(samples)} clips (speech: {source})", extra
