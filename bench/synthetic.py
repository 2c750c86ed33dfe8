"""Deterministic synthetic memories for the speed benchmarks: varied, sentence-like, reproducible."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

NAMES = [
    "Ada",
    "Tomas",
    "Mira",
    "Jonas",
    "Priya",
    "Lukas",
    "Elena",
    "Haruto",
    "Sofia",
    "Omar",
    "Lena",
    "Kofi",
    "Ines",
    "Ravi",
    "Yuki",
    "Marta",
    "Diego",
    "Anya",
    "Felix",
    "Noor",
]
TOPICS = [
    "the payments service",
    "the refund job",
    "the checkout SDK",
    "the staging cluster",
    "the Kyoto trip",
    "the hotel booking",
    "the train to Milan",
    "the soil microbiome paper",
    "the bumblebee experiment",
    "the grant report",
    "the CI pipeline",
    "the database migration",
    "the on-call rota",
    "the quarterly plan",
    "the budget sheet",
    "the user interview",
    "the field station",
    "the conference talk",
    "the API gateway",
    "the mobile release",
]
VERBS = [
    "prefers",
    "asked about",
    "reviewed",
    "postponed",
    "fixed",
    "booked",
    "cancelled",
    "summarised",
    "measured",
    "approved",
    "rejected",
    "documented",
    "benchmarked",
    "migrated",
    "scheduled",
    "questioned",
    "deployed",
    "estimated",
    "tested",
    "planned",
]
DETAILS = [
    "before the deadline",
    "with a 3% error budget",
    "after two failed attempts",
    "using the new template",
    "for the Berlin office",
    "in eu-central-1",
    "with a budget of 400 EUR",
    "at 07:30 local time",
    "because latency doubled",
    "following the incident review",
    "with Spanish subtitles",
    "in version 2.4",
    "on the second floor",
    "with the vegan menu",
    "without the legacy flag",
    "for 12 participants",
    "at 1,970 m altitude",
    "with glmmTMB",
    "behind a feature flag",
    "after the retro",
]


def sentences(n: int, seed: int = 7) -> list[str]:
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        out.append(
            f"{rnd.choice(NAMES)} {rnd.choice(VERBS)} {rnd.choice(TOPICS)} {rnd.choice(DETAILS)} "
            f"(note {i}, ticket {rnd.randint(100, 9999)})."
        )
    return out


def timestamps(n: int, days: int = 365, seed: int = 11) -> list[datetime]:
    rnd = random.Random(seed)
    end = datetime(2026, 11, 29, tzinfo=UTC)
    return [end - timedelta(seconds=rnd.randint(0, days * 86400)) for _ in range(n)]
