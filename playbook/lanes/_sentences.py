"""A large pool of generated English sentences: a distinct one per request, so the radix cache cannot answer.

Each sentence is subject + verb + object + place + manner, 24 choices each (about 8 million
sentences). Words are plain and spelled out (no digits, no names) so a transcription that
normalises case and punctuation matches them word for word.
"""

from __future__ import annotations

SUBJECTS = (
    "the old farmer", "a young pilot", "my neighbour", "the quiet student", "our teacher", "the tall engineer",
    "a busy doctor", "the little girl", "his brother", "the museum guide", "a careful driver", "the night nurse",
    "the baker", "her grandmother", "a tired painter", "the new manager", "my cousin", "the shy musician",
    "a local fisherman", "the kind librarian", "our gardener", "the young chef", "a friendly sailor", "the mayor",
)
VERBS = (
    "painted", "carried", "found", "opened", "repaired", "washed", "sold", "borrowed", "described", "delivered",
    "cleaned", "measured", "wrapped", "moved", "checked", "ordered", "packed", "returned", "polished", "collected",
    "photographed", "covered", "lifted", "carved",
)
OBJECTS = (
    "a green bicycle", "the wooden table", "a basket of apples", "a heavy suitcase", "the kitchen window",
    "an old map of the city", "the broken clock", "a pair of leather boots", "the garden gate", "a box of letters",
    "the blue umbrella", "a stack of books", "the silver teapot", "a large painting", "the front door",
    "a wool blanket", "the red kite", "a glass vase", "the school bus", "a bag of flour", "the brass lamp",
    "a paper lantern", "the stone bench", "a small boat",
)
PLACES = (
    "near the river", "before breakfast", "in the small garden", "after the long meeting", "at the train station",
    "on a rainy morning", "behind the old church", "during the storm", "at the edge of the forest",
    "inside the warm kitchen", "on the busy market square", "after lunch", "beside the harbour",
    "in the empty hallway", "under the bright lights", "on the way home", "at the top of the hill",
    "in the crowded library", "before the concert", "outside the bakery", "on the quiet beach",
    "in the late evening", "next to the bridge", "across the street",
)
MANNERS = (
    "without saying a word", "with great care", "as quickly as possible", "for the first time", "with a big smile",
    "while humming a song", "very slowly", "with some help", "in complete silence", "before anyone noticed",
    "with steady hands", "to everyone's surprise", "as the sun went down", "with a little help from a friend",
    "while the dog watched", "and then went to sleep", "just in time", "once again", "with a borrowed tool",
    "after a short rest", "despite the cold wind", "for an old friend", "as promised", "in the usual way",
)
PARTS = (SUBJECTS, VERBS, OBJECTS, PLACES, MANNERS)
POOL = 24 ** len(PARTS)
STRIDE = 1_000_003  # coprime with POOL (2^15 * 3^5): index -> sentence is one-to-one
PER_CLIP = 256  # sentence slots each request can draw from (a 120 s clip needs about 40)


def sentence(seed: int, number: int) -> str:
    """The `number`-th sentence of the pool's seeded order; distinct numbers give distinct sentences."""
    n = (number * STRIDE + seed * 7919) % POOL
    words = []
    for part in PARTS:
        n, k = divmod(n, len(part))
        words.append(part[k])
    return " ".join(words)


def clip_sentence(seed: int, media_slot: int, k: int) -> str:
    """Sentence k of the clip for one media slot; no two (slot, k) pairs share a sentence."""
    return sentence(seed, media_slot * PER_CLIP + k)
