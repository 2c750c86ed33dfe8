"""Tiny files in the formats of the benchmark data sets the bench scripts read (../shared/data: LoCoMo's
locomo10.json, LongMemEval-S, the multi-hop QA ``*.jsonl``), written by the tests into their own temporary folder.
The texts are made up here: the licensed data never enters the repository. Each file has questions whose evidence
is in it, so the scripts compute real recall numbers, not only empty tables."""

from __future__ import annotations

import json
from pathlib import Path

LOCOMO = [
    {
        "sample_id": "conv-tiny",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a puppy called Miso last weekend."},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "Congrats! What breed is Miso?"},
                {"speaker": "Ana", "dia_id": "D1:3", "text": "A shiba inu.", "blip_caption": "a small red dog"},
                {"speaker": "Ben", "dia_id": "D1:4", "text": "My sister runs a bakery in Lisbon."},
            ],
            "session_2_date_time": "10:00 am on 20 June, 2023",
            "session_2": [
                {"speaker": "Ben", "dia_id": "D2:1", "text": "I started pottery classes on Tuesdays."},
                {"speaker": "Ana", "dia_id": "D2:2", "text": "Miso chewed my sandals again."},
                {"speaker": "Ben", "dia_id": "D2:3", "text": "We are flying to Osaka in September."},
            ],
        },
        "qa": [
            {"question": "What breed is Ana's puppy?", "answer": "shiba inu", "evidence": ["D1:3"], "category": 4},
            {"question": "When does Ben go to pottery?", "answer": "Tuesdays", "evidence": ["D2:1"], "category": 2},
            {
                "question": "What did Ana's shiba inu chew?",
                "answer": "sandals",
                "evidence": ["D2:2; D1:3"],
                "category": 1,
            },
        ],
    }
]

LONGMEMEVAL = [
    {
        "question_id": "tiny-1",
        "question_type": "single-session-user",
        "question": "What colour is my new bike?",
        "question_date": "2023/06/20 (Tue) 17:03",
        "answer": "green",
        "answer_session_ids": ["s-b"],
        "haystack_session_ids": ["s-a", "s-b"],
        "haystack_dates": ["2023/05/01 (Mon) 09:00", "2023/06/02 (Fri) 18:30"],
        "haystack_sessions": [
            [
                {"role": "user", "content": "Any tips for baking sourdough bread?"},
                {"role": "assistant", "content": "Use a lively starter and a long cold proof."},
            ],
            [
                {"role": "user", "content": "I just bought a green gravel bike!", "has_answer": True},
                {"role": "assistant", "content": "Nice, gravel bikes are versatile."},
            ],
        ],
    },
    {
        "question_id": "tiny-2",
        "question_type": "temporal-reasoning",
        "question": "Which city did I move to last spring?",
        "question_date": "2023/07/01 (Sat) 08:00",
        "answer": "Porto",
        "answer_session_ids": ["s-c"],
        "haystack_session_ids": ["s-c", "s-d"],
        "haystack_dates": ["2023/04/11 (Tue) 08:00", "2023/06/30 (Fri) 08:00"],
        "haystack_sessions": [
            [
                {"role": "user", "content": "I moved to Porto in April for the new job.", "has_answer": True},
                {"role": "assistant", "content": "Porto is lovely in spring."},
            ],
            [{"role": "user", "content": "Remind me to water the plants."}],
        ],
    },
]

# (title, paragraph, supporting) per question: the second paragraph bridges from the first.
MULTIHOP = [
    (
        "Who founded the company that makes the Kestrel kettle?",
        [
            ("Kestrel kettle", "The Kestrel kettle is made by Brightwater Appliances.", True),
            ("Brightwater Appliances", "Brightwater Appliances was founded by Ines Duarte in 1987.", True),
            ("Harbour bridge", "The harbour bridge opened in 1932 after eight years of work.", False),
            ("Alpine lakes", "Alpine lakes freeze over for several months each winter.", False),
        ],
    ),
    (
        "In which country was the author of The Quiet Orchard born?",
        [
            ("The Quiet Orchard", "The Quiet Orchard is a novel by Tomas Lindqvist.", True),
            ("Tomas Lindqvist", "Tomas Lindqvist was born in Uppsala, Sweden.", True),
            ("Copper mining", "Copper mining shaped the region's economy for a century.", False),
        ],
    ),
]


def write_locomo(folder: Path) -> Path:
    path = folder / "locomo-tiny.json"
    path.write_text(json.dumps(LOCOMO), encoding="utf-8")
    return path


def write_longmemeval(folder: Path) -> Path:
    path = folder / "longmemeval-tiny.json"
    path.write_text(json.dumps(LONGMEMEVAL), encoding="utf-8")
    return path


def write_multihop(folder: Path) -> Path:
    """One JSON object per line, as in ``musique_migres200-dev.jsonl``."""
    lines = []
    for n, (question, paragraphs) in enumerate(MULTIHOP):
        lines.append(
            json.dumps(
                {
                    "id": f"tiny-{n}",
                    "question": question,
                    "paragraphs": [
                        {"idx": i, "title": title, "paragraph_text": text, "is_supporting": supporting}
                        for i, (title, text, supporting) in enumerate(paragraphs)
                    ],
                }
            )
        )
    path = folder / "multihop-tiny.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
