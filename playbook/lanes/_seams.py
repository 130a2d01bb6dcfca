"""Streamed audio quality without a model: continuity at the chunk joins, and chunk arrival against playback.

Seam score: a streaming decoder that restarts state at a chunk boundary leaves a click (a
jump in sample value) exactly at the join. For each join we take the largest sample step
within one sample of it and divide by the 99th percentile of sample steps inside the chunks
(floored at FLOOR so near-silence does not inflate it). A continuous waveform scores
1 or less at every join; a click or phase jump scores many times that.

Stalls: a client plays chunk k once chunk k-1 has finished; it stalls when chunk k arrives
after that moment. Counted per request, with the seconds spent waiting.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

FLOOR = 64  # sample-step floor of the within-chunk reference (about -54 dBFS)


@dataclass
class Chunk:
    at: float  # arrival, seconds after the request was sent
    pcm: bytes  # 16-bit mono
    rate: int

    @property
    def seconds(self) -> float:
        return len(self.pcm) / 2 / self.rate


def _samples(pcm: bytes) -> tuple[int, ...]:
    return struct.unpack(f"<{len(pcm) // 2}h", pcm[: len(pcm) // 2 * 2])


def seam_scores(chunks: list[bytes]) -> list[float]:
    """One score per join between consecutive non-empty chunks (see the module doc)."""
    pieces = [_samples(c) for c in chunks if len(c) >= 2]
    x, joins = [], []
    for piece in pieces:
        if x:
            joins.append(len(x))
        x.extend(piece)
    if not joins:
        return []
    steps = [abs(x[i] - x[i - 1]) for i in range(1, len(x))]  # steps[i - 1] is the step into sample i
    near = {j + d for j in joins for d in (-1, 0, 1)}
    inside = sorted(s for i, s in enumerate(steps, 1) if i not in near)
    ref = max(inside[min(int(len(inside) * 0.99), len(inside) - 1)] if inside else 0, FLOOR)
    return [max(steps[i - 1] for i in (j - 1, j, j + 1) if 1 <= i < len(x)) / ref for j in joins]


def stalls(chunks: list[Chunk]) -> tuple[int, float]:
    """(how many times playback would wait for the next chunk, seconds waited) for one reply."""
    if not chunks:
        return 0, 0.0
    count, waited, clock = 0, 0.0, chunks[0].at
    for chunk in chunks:
        if chunk.at > clock + 1e-9:
            if chunk is not chunks[0]:
                count += 1
                waited += chunk.at - clock
            clock = chunk.at
        clock += chunk.seconds
    return count, waited


def stream_report(chunks: list[Chunk]) -> dict:
    """Per-request fields: chunk arrivals and lengths, stalls, the worst seam and where it is."""
    scores = seam_scores([c.pcm for c in chunks])
    count, waited = stalls(chunks)
    worst = max(range(len(scores)), key=scores.__getitem__) if scores else None
    return {"chunks": len(chunks), "chunk_at_s": [round(c.at, 4) for c in chunks],
            "chunk_seconds": [round(c.seconds, 4) for c in chunks], "stalls": count, "stall_s": round(waited, 4),
            "seam_worst": round(scores[worst], 3) if scores else None,
            "seam_worst_join": worst + 1 if worst is not None else None, "joins": len(scores)}
