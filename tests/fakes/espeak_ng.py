"""espeak-ng for the lane tests (bin/espeak-ng runs this): `-w OUT ... TEXT` writes 16 kHz "speech" that carries its words.

The PCM starts with a header (two marker samples, a length, then one sample per UTF-8 byte
of TEXT) followed by 0.3 s of tone per word, so the stand-in server can read back what a
clip says from its samples alone (standin_speech.said_in), as the websocket lane sends only
PCM. FAKE_ESPEAK_FAIL=1 makes it fail the way a broken install does.
"""
import math
import os
import struct
import sys

MARK = (0x5A7A, 0x7A5A)  # standin_speech.SPEECH_MARK
if os.environ.get("FAKE_ESPEAK_FAIL"):
    sys.exit("espeak-ng: cannot open voice en-us")
args = sys.argv[1:]
out, text, rate = args[args.index("-w") + 1], args[-1], 16000
data = text.encode()
header = struct.pack(f"<3h{len(data)}h", *MARK, len(data), *data)
n = int(0.3 * rate * max(len(text.split()), 1))
# 300 Hz at 16 kHz repeats every 160 samples: one stretch of the tone, copied
period = struct.pack("<160h", *(int(3000 * math.sin(2 * math.pi * 300 * i / rate)) for i in range(160)))
pcm = header + (period * (n // 160 + 1))[:2 * n]
fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)
body = b"WAVE" + b"fmt " + struct.pack("<I", 16) + fmt + b"data" + struct.pack("<I", len(pcm)) + pcm
with open(out, "wb") as fh:
    fh.write(b"RIFF" + struct.pack("<I", len(body)) + body)
