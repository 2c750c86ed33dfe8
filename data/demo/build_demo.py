#!/usr/bin/env python3
"""Build the memlens demo dataset (demo.jsonl + two_hop.json) deterministically.

Run:  python data/demo/build_demo.py
All content is hand-written below as Python data; the only randomness (outcome timestamps) uses a fixed seed.
The script verifies the output (valid JSON, counts, id rules, references, two-hop constraints) and prints counts.
"""

from __future__ import annotations

import json
import random
import re
import sys
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "demo.jsonl"
TWO_HOP_OUT = HERE / "two_hop.json"
NOW = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
SEED = 20261129


def ts(s: str) -> datetime:
    """'2026-06-10 09:05' or '06-10 09:05' or '06-10' -> aware UTC datetime."""
    if not s.startswith("2026"):
        s = "2026-" + s
    if " " not in s:
        s += " 00:00"
    return datetime.strptime(s, "%Y-%m-%d %H:%M").replace(tzinfo=UTC)


def iso(d: datetime) -> str:
    return d.isoformat()


def tool(name: str, **args) -> str:
    return json.dumps({"name": name, "args": args}, ensure_ascii=False)


# ============================================================================================================
# SESSIONS (messages). Each: (user, session_id, start, [(role, content), ...])
# ============================================================================================================
SESSIONS: list[tuple[str, str, str, list[tuple[str, str]]]] = []


def session(user: str, sid: str, start: str, msgs: list[tuple[str, str]]) -> None:
    SESSIONS.append((user, sid, start, msgs))


# ------------------------------------------------------------------------------------------------- ada ----
ADA_SYS = (
    "You are Ada's coding agent for the Paylane payments platform (Python 3.12 services in paylane-core, "
    "TypeScript checkout SDK and dashboard). Use the repo tools. Never push to main; never print card data."
)

session(
    "ada",
    "ada-s01",
    "06-10 09:05",
    [
        ("system", ADA_SYS),
        ("user", "Morning. Before we start on the refunds work, can you check which linters paylane-core runs in CI?"),
        ("assistant", "Sure, I'll read the CI workflow."),
        ("tool", tool("read_file", path=".github/workflows/ci.yml")),
        (
            "tool_result",
            "jobs:\n  lint:\n    steps:\n      - run: ruff check .\n      - run: ruff format --check .\n"
            "      - run: mypy --strict src/paylane\n  test:\n    steps:\n"
            "      - run: pytest -q -n 4 --cov=src/paylane --cov-fail-under=85",
        ),
        (
            "assistant",
            "CI runs `ruff check`, `ruff format --check`, `mypy --strict` on src/paylane, and pytest with 4 "
            "xdist workers and an 85% coverage floor.",
        ),
        (
            "user",
            "Good. I prefer ruff over black now, we dropped black last week. Always run mypy locally before you "
            "propose a diff. And no print() in services, only structlog.",
        ),
        (
            "assistant",
            "Noted as standing preferences: ruff for lint and format, `mypy --strict` before every diff, "
            "structlog with a bound request_id instead of print().",
        ),
        ("user", "Run the refunds tests so we know where we are."),
        ("tool", tool("run", cmd="pytest -q tests/refunds")),
        (
            "tool_result",
            "........F...\nFAILED tests/refunds/test_partial.py::test_partial_refund_rounding - "
            "AssertionError: Decimal('10.01') != Decimal('10.00')\n1 failed, 11 passed in 3.42s",
        ),
        (
            "assistant",
            "11 pass, 1 fails: test_partial_refund_rounding expects 10.00 and gets 10.01. It looks like "
            "partial_refund_total rounds each line item before summing.",
        ),
        ("user", "Known issue. Amounts are Decimal, ROUND_HALF_EVEN, and we only round once at the very end. Fix it?"),
        ("assistant", "I'll sum the raw Decimals and quantize once with ROUND_HALF_EVEN."),
        ("tool", tool("apply_patch", path="src/paylane/refunds/partial.py")),
        ("tool_result", "patched 1 file, 6 insertions(+), 4 deletions(-)"),
        ("tool", tool("run", cmd="mypy --strict src/paylane && pytest -q tests/refunds")),
        ("tool_result", "Success: no issues found in 142 source files\n............\n12 passed in 3.31s"),
        (
            "user",
            "Nice. Open a PR from fix/partial-refund-rounding. Keep the description short, with a Testing section.",
        ),
        (
            "assistant",
            'Opened PR #311 "Round partial refunds once, with banker\'s rounding" from '
            "fix/partial-refund-rounding. Sections: Summary (2 lines) and Testing (mypy, tests/refunds).",
        ),
    ],
)

session(
    "ada",
    "ada-s02",
    "07-22 14:10",
    [
        ("user", "test_idempotent_capture failed on CI again, third time this week. It passes locally."),
        ("assistant", "Let me pull the log of the last failing run."),
        ("tool", tool("ci_logs", run_id=88412)),
        (
            "tool_result",
            "FAILED tests/payments/test_capture.py::test_idempotent_capture - psycopg.errors.UniqueViolation: "
            'duplicate key value violates unique constraint "idempotency_keys_pkey"  [worker gw2]',
        ),
        (
            "assistant",
            "It fails on xdist worker gw2 with a UniqueViolation on idempotency_keys_pkey. The fixture uses "
            "the constant key 'test-key-1', so two workers can collide in the shared test database.",
        ),
        ("user", "Makes sense. What do you suggest?"),
        (
            "assistant",
            "Two options: (1) generate the key per test with uuid4 in the fixture; (2) give every xdist "
            "worker its own database using PYTEST_XDIST_WORKER. (1) is a 3-line change.",
        ),
        ("user", "Only the fixture change. Per-worker databases is a bigger design, Marco wants to own that."),
        ("tool", tool("apply_patch", path="tests/conftest.py")),
        ("tool_result", "patched 1 file, 3 insertions(+), 1 deletion(-)"),
        ("tool", tool("run", cmd="pytest -q -n 4 tests/payments --count 20")),
        ("tool_result", "480 passed in 41.8s"),
        ("assistant", "Ran the payments suite 20 times on 4 workers: 480 passed, no UniqueViolation."),
        ("user", "Also remember the idempotency key TTL is 24h in prod; tests shouldn't assume anything longer."),
        ("assistant", "Noted: idempotency keys expire after 24 hours in production. Fixtures will stay inside that."),
        ("user", "Ship it as a small PR, Marco reviews test infra."),
        ("assistant", 'Opened PR #356 "Unique idempotency keys per test" and requested review from Marco Bianchi.'),
    ],
)

session(
    "ada",
    "ada-s03",
    "09-03 10:00",
    [
        ("user", "We're moving the checkout SDK's runtime validation from io-ts to zod. Where do we import io-ts?"),
        ("tool", tool("grep", pattern="from 'io-ts'", path="packages/checkout-sdk/src")),
        ("tool_result", "src/schemas/session.ts\nsrc/schemas/paymentMethod.ts\nsrc/schemas/threeDS.ts\nsrc/client.ts"),
        ("assistant", "Four files: three schemas under src/schemas plus client.ts."),
        ("user", "Start with paymentMethod.ts. Keep the exported type names identical so consumers don't break."),
        (
            "assistant",
            "I'll use z.discriminatedUnion on `type` and export "
            "`type PaymentMethod = z.infer<typeof PaymentMethodSchema>` under the old name.",
        ),
        ("tool", tool("apply_patch", path="packages/checkout-sdk/src/schemas/paymentMethod.ts")),
        ("tool_result", "patched 1 file, 38 insertions(+), 52 deletions(-)"),
        ("tool", tool("run", cmd="pnpm -F checkout-sdk typecheck && pnpm -F checkout-sdk test")),
        (
            "tool_result",
            "src/client.ts:88:5 - error TS2322: Type 'PaymentMethod | undefined' is not assignable to "
            "type 'PaymentMethod'.\nFound 1 error.",
        ),
        (
            "assistant",
            "One type error at client.ts:88. With zod, `.optional()` makes the field possibly undefined, "
            "whereas the io-ts codec was required with a default. I'll switch to `.default()` to keep the "
            "old contract.",
        ),
        ("tool", tool("apply_patch", path="packages/checkout-sdk/src/schemas/paymentMethod.ts")),
        ("tool_result", "patched 1 file, 1 insertion(+), 1 deletion(-)"),
        ("tool", tool("run", cmd="pnpm -F checkout-sdk typecheck && pnpm -F checkout-sdk test")),
        ("tool_result", "tsc: 0 errors\n Test Files  9 passed (9)\n      Tests  64 passed (64)"),
        ("user", "Nice. Remember we target ES2020 and the bundle must stay under 40 kB gzipped. zod isn't light."),
        ("tool", tool("run", cmd="pnpm -F checkout-sdk size")),
        ("tool_result", "dist/index.mjs: 37.9 kB gzipped (limit 40 kB)"),
        (
            "assistant",
            "37.9 kB gzipped, so 2.1 kB of headroom. The remaining three files may push us over; "
            "zod/mini is the fallback if they do.",
        ),
        ("user", "Measure after each file. That's it for today."),
    ],
)

session(
    "ada",
    "ada-s04",
    "10-15 16:20",
    [
        ("user", "I need a migration adding `settled_at` to payouts. The table has about 90 million rows."),
        (
            "assistant",
            "On Postgres 15 adding a nullable column without a default is metadata-only, so it's fast. The "
            "risk is the ACCESS EXCLUSIVE lock queueing behind long transactions, so I'll set a lock_timeout.",
        ),
        ("user", "Yes, we always set lock_timeout = '3s' and a statement_timeout in migrations. Write it."),
        ("tool", tool("write_file", path="migrations/versions/2026_10_15_add_payout_settled_at.py")),
        ("tool_result", "wrote 31 lines"),
        (
            "assistant",
            "The migration sets lock_timeout 3s, adds settled_at TIMESTAMPTZ NULL, and builds the index "
            "with CREATE INDEX CONCURRENTLY inside an autocommit block.",
        ),
        ("user", "Run it against staging-eu. Show me the command first."),
        ("assistant", "Command: `alembic -x env=staging-eu upgrade head`. Running it now."),
        ("tool", tool("run", cmd="alembic -x env=staging-eu upgrade head")),
        (
            "tool_result",
            "INFO  [alembic.runtime.migration] Running upgrade 7c1e2a9 -> 4bd09f1, add payout settled_at\n"
            "sqlalchemy.exc.OperationalError: canceling statement due to lock timeout",
        ),
        ("assistant", "It hit the 3s lock timeout; something holds a lock on payouts. Checking pg_stat_activity."),
        (
            "tool",
            tool(
                "run",
                cmd='psql $STAGING_EU_RO -c "select pid, application_name, state, now()-xact_start '
                "from pg_stat_activity where query ilike '%payouts%'\"",
            ),
        ),
        ("tool_result", " pid   | application_name | state  | ?column?\n 41822 | payout_batcher   | active | 00:07:41"),
        (
            "assistant",
            "The nightly payout_batcher has held a FOR UPDATE SKIP LOCKED transaction for 7 minutes. We can "
            "wait, or pause it with its feature flag and retry.",
        ),
        ("user", "Pause it with payouts.batcher.enabled, then retry."),
        (
            "tool",
            tool(
                "run",
                cmd="flagctl set payouts.batcher.enabled false --env staging-eu && "
                "alembic -x env=staging-eu upgrade head",
            ),
        ),
        (
            "tool_result",
            "flag payouts.batcher.enabled=false (staging-eu)\nINFO  Running upgrade 7c1e2a9 -> 4bd09f1\n"
            "INFO  CREATE INDEX CONCURRENTLY ix_payouts_settled_at ... done in 212s",
        ),
        ("assistant", "Applied on staging-eu; the concurrent index took 212 s. The batcher flag is still off."),
        ("user", "Turn it back on. And note: prod migrations only in the Tuesday 06:00 UTC window."),
        ("tool", tool("run", cmd="flagctl set payouts.batcher.enabled true --env staging-eu")),
        ("tool_result", "flag payouts.batcher.enabled=true (staging-eu)"),
        ("assistant", "Batcher re-enabled. Noted: production migrations only in the Tuesday 06:00 UTC window."),
    ],
)

session(
    "ada",
    "ada-s05",
    "11-12 08:40",
    [
        (
            "user",
            "Support says some merchants got two 'payment captured' emails this morning. Duplicate Adyen webhooks?",
        ),
        ("assistant", "I'll look for pspReferences received more than once in the last 24 hours."),
        (
            "tool",
            tool(
                "log_search",
                query="event=adyen.webhook.received",
                group_by="psp_reference",
                having="count>1",
                since="24h",
            ),
        ),
        ("tool_result", "37 psp_reference values with count>1\nexample: 8815736412340017 x2 (08:01:12Z, 08:01:14Z)"),
        (
            "assistant",
            "37 payments were notified twice, two seconds apart. Our handler dedupes on our own event id, "
            "but an Adyen retry carries the same pspReference and eventCode, not our id.",
        ),
        ("user", "So the dedupe key is wrong?"),
        (
            "assistant",
            "Yes. Dedupe on (pspReference, eventCode, success), and send the email only on the first state transition.",
        ),
        ("user", "Do it, with a test that replays the same notification twice."),
        ("tool", tool("apply_patch", path="src/paylane/webhooks/adyen.py")),
        ("tool_result", "patched 2 files, 41 insertions(+), 9 deletions(-)"),
        ("tool", tool("run", cmd="pytest -q tests/webhooks")),
        (
            "tool_result",
            "FAILED tests/webhooks/test_adyen.py::test_replay_same_notification - "
            "assert 2 == 1  (emails_sent)\n1 failed, 22 passed",
        ),
        (
            "assistant",
            "Still two emails: the outbox row is written before the dedupe insert commits. I'll move the "
            "outbox write into the same transaction as the dedupe row.",
        ),
        ("tool", tool("apply_patch", path="src/paylane/webhooks/adyen.py")),
        ("tool_result", "patched 1 file, 12 insertions(+), 10 deletions(-)"),
        ("tool", tool("run", cmd="mypy --strict src/paylane && pytest -q tests/webhooks")),
        ("tool_result", "Success: no issues found in 147 source files\n23 passed in 2.10s"),
        ("user", "Good. Write a short incident note for #payments-incidents."),
        (
            "assistant",
            "Incident note: between 07:55 and 08:20 UTC, 37 captures sent duplicate confirmation emails "
            "because Adyen retries were deduplicated on our internal event id. Fix (PR #471): dedupe on "
            "(pspReference, eventCode, success) and write the outbox in the same transaction. No double "
            "charges.",
        ),
    ],
)

session(
    "ada",
    "ada-s06",
    "11-29 10:15",
    [
        ("user", "New bug: JPY refunds show a decimal in the dashboard, like ¥1200.0."),
        ("assistant", "JPY has zero minor units. Let me see how the dashboard formats amounts."),
        ("tool", tool("grep", pattern="toFixed", path="packages/dashboard/src")),
        ("tool_result", "src/format/money.ts:14:  return (amount / 100).toFixed(1)"),
        (
            "assistant",
            "money.ts divides by 100 and calls toFixed(1) for every currency. It should follow the ISO 4217 "
            "exponent: 0 for JPY and KRW, 3 for KWD and BHD, 2 for most others.",
        ),
        ("user", "Use Intl.NumberFormat rather than a hand-written table."),
        (
            "assistant",
            "Agreed. We store minor units, so I'll take the exponent from "
            "`resolvedOptions().maximumFractionDigits` of a currency formatter and divide by 10^exponent.",
        ),
        ("tool", tool("apply_patch", path="packages/dashboard/src/format/money.ts")),
        ("tool_result", "patched 1 file, 19 insertions(+), 7 deletions(-)"),
        ("tool", tool("run", cmd="pnpm -F dashboard test money")),
        (
            "tool_result",
            "  ✓ formats JPY without decimals\n  ✗ formats KWD with 3 decimals: expected 'KWD 1.500' "
            "received 'KWD 1.50'\n Tests  1 failed | 12 passed (13)",
        ),
        (
            "assistant",
            "JPY is fixed. KWD still shows 2 decimals because formatCompact() passes "
            "maximumFractionDigits: 2 explicitly. Removing that override.",
        ),
        ("tool", tool("apply_patch", path="packages/dashboard/src/format/compact.ts")),
        ("tool_result", "patched 1 file, 0 insertions(+), 1 deletion(-)"),
        ("tool", tool("run", cmd="pnpm -F dashboard test money")),
        ("tool_result", " Tests  13 passed (13)"),
        ("assistant", "All 13 money tests pass: JPY renders as ¥1,200 and KWD as KWD 1.500."),
        ("user", "Nice. I'm off to lunch; leave the PR as draft and list what's left."),
        (
            "assistant",
            "Draft PR #498 is open. Left: (1) check the CSV export uses the same formatter, (2) ask Hana "
            "whether KWD should show the code or a symbol.",
        ),
    ],
)

# ------------------------------------------------------------------------------------------------ tomas ---
TOMAS_SYS = (
    "You are Tomas's travel assistant. Home: Munich (MUC, München Hbf). Prefer rail under 6 hours. Quote prices in EUR."
)

session(
    "tomas",
    "tomas-s01",
    "06-18 19:30",
    [
        ("system", TOMAS_SYS),
        ("user", "Lucía and I want a long weekend in Portugal in early October. Thinking Lisbon and Porto. Ideas?"),
        (
            "assistant",
            "Early October is still around 24°C in Lisbon with thinner crowds. Simple plan: fly MUC→LIS "
            "Friday 2 Oct, two nights Lisbon, Alfa Pendular train to Porto (about 2 h 50 min), two nights "
            "Porto, fly OPO→MUC Tuesday 6 Oct.",
        ),
        ("user", "Open-jaw sounds good. Flights?"),
        (
            "assistant",
            "Lufthansa flies MUC→LIS direct at 07:05, arriving 09:35. TAP flies OPO→MUC direct on "
            "Tuesdays at 13:20. Right now about €190 and €140 per person with a cabin bag.",
        ),
        ("user", "We only travel with cabin bags anyway. Aisle for me, Lucía likes the window."),
        ("assistant", "Noted: cabin bags only, aisle for you, window for Lucía. Shall I hold these fares?"),
        (
            "user",
            "Hold them. In Lisbon, something in Alfama or Príncipe Real under €160 a night, with character. "
            "No big chains.",
        ),
        (
            "assistant",
            "Three options: Memmo Alfama (€158, rooftop terrace), Casa Amora in Campo de Ourique "
            "(€135, lovely breakfast) and Dear Lisbon in Príncipe Real (€149). Memmo has the view, Casa "
            "Amora is the best value.",
        ),
        ("user", "Memmo Alfama. In Porto we'd like a port wine cellar visit in Vila Nova de Gaia."),
        (
            "assistant",
            "Booked Memmo Alfama for 2–4 Oct. In Gaia, Graham's has a Monday 11:00 tasting with a view over "
            "the Douro for €30 per person; Taylor's is similar but busier.",
        ),
        ("user", "Graham's on Monday, perfect. We'll pick the Porto hotel later."),
        ("assistant", "Graham's tasting booked for Monday 5 Oct at 11:00. I'll remind you about Porto next week."),
        ("user", "Also Lucía doesn't eat seafood, so keep that in mind for restaurants."),
        (
            "assistant",
            "Noted. In Lisbon I'd suggest Prado (farm-to-table) and Taberna da Rua das Flores, both with "
            "good meat and vegetable dishes.",
        ),
    ],
)

session(
    "tomas",
    "tomas-s02",
    "07-30 20:05",
    [
        ("user", "My friend Lukas and I want to do part of the Alta Via 1, 12–16 September. Four nights in huts."),
        (
            "assistant",
            "Classic choice. Northern section: Lago di Braies → Rifugio Biella → Rifugio Fanes → Rifugio "
            "Lagazuoi → Rifugio Averau → Passo Giau. Stages are 5–7 hours with 600–1,100 m of ascent.",
        ),
        ("user", "We're fit, but his knee is bad on long descents. Any easier variant?"),
        (
            "assistant",
            "From Lagazuoi you can take the cable car down to Passo Falzarego and walk the gentler path to "
            "Averau. That saves about 650 m of steep descent on scree.",
        ),
        ("user", "Good. How do we get to Lago di Braies from Munich?"),
        (
            "assistant",
            "Train Munich → Innsbruck → Fortezza → Dobbiaco (about 5 h 10 min), then bus 442 to Lago di "
            "Braies (25 min). Cars are restricted on the Braies road 10:00–15:00 in summer; the bus is fine.",
        ),
        ("user", "Rail is perfect. Can you book the huts?"),
        (
            "assistant",
            "Huts book by email. I've sent requests for Biella (12 Sep), Fanes (13), Lagazuoi (14) and "
            "Averau (15), 2 people, dorm, half board. Half board is typically €65–€85 per person.",
        ),
        ("user", "Dorms are fine if privates are much more expensive."),
        (
            "assistant",
            "Private rooms are €25–€40 more per person, so dorms. Fanes and Averau confirmed already; "
            "Biella and Lagazuoi are pending.",
        ),
        ("user", "What should I pack? It's September up there."),
        (
            "assistant",
            "Expect 0–5°C mornings at 2,750 m and possible snow. Essentials: hut sleeping-bag liner "
            "(mandatory), headlamp, warm layer, rain shell, gloves, the Tabacco 1:25,000 sheet 03, and cash.",
        ),
        ("user", "Cash only at huts? How much?"),
        (
            "assistant",
            "Many huts don't take cards. Plan about €100 per person per day for half board, drinks and "
            "shower tokens, so roughly €400 each for the four nights.",
        ),
    ],
)

session(
    "tomas",
    "tomas-s03",
    "08-25 21:10",
    [
        (
            "user",
            "Next big one: Japan with Lucía in November. Out 2 Nov, back 14 Nov. Kyoto base, maybe Osaka and "
            "Nara as day trips.",
        ),
        (
            "assistant",
            "Good timing: autumn colours reach Kyoto's temples around 10–20 Nov. With 12 nights I'd usually "
            "suggest 8 in Kyoto and 3 in Tokyo at the end.",
        ),
        ("user", "We'd rather skip Tokyo this time. Slow travel, one base."),
        (
            "assistant",
            "Then 11 nights in Kyoto with day trips: Nara (45 min on Kintetsu), Osaka (30 min Special "
            "Rapid), Himeji (about 1 h by Shinkansen) and the Kurama–Kibune hike. A JR Pass isn't worth it "
            "for this; use ICOCA cards.",
        ),
        ("user", "Flights from Munich?"),
        (
            "assistant",
            "Lufthansa LH714 MUC→HND on 2 Nov at 11:55, arriving 07:40 next morning, then the Shinkansen "
            "to Kyoto (2 h 15 min). Back: Finnair KIX→HEL→MUC on 14 Nov. The open-jaw is €1,080 per person.",
        ),
        ("user", "€1,080 works. Aisle and window as usual."),
        ("assistant", "Booked. LH714 seats 34C/34A; Finnair 41C/41A on both legs. Total €2,160."),
        (
            "user",
            "For sleeping: a ryokan for two nights, then an apartment or small hotel near Gion or the Kamo river.",
        ),
        (
            "assistant",
            "Ryokan Motonago in Higashiyama for 2 nights (about €420/night with kaiseki dinner), then a "
            "machiya near Shijo-Kawaramachi for 9 nights (about €150/night). Kaiseki dashi usually contains "
            "bonito, so I'll ask the ryokan for a vegetarian kaiseki for Lucía.",
        ),
        ("user", "Yes, ask. We also want a guided temple walk, English or Spanish speaking."),
        (
            "assistant",
            "Found a private half-day Higashiyama temple walk, ¥32,000 for two. The agency assigns the guide "
            "a week before; I've asked for a Spanish-speaking guide if possible.",
        ),
        ("user", "Budget check?"),
        (
            "assistant",
            "Flights €2,160, ryokan €840, machiya €1,350, tour about €200, local transport about €250, food "
            "about €1,080. Roughly €5,880, under your €6,500 cap.",
        ),
    ],
)

session(
    "tomas",
    "tomas-s04",
    "09-28 07:15",
    [
        ("user", "TAP just emailed: our Tuesday OPO→MUC flight on 6 Oct is cancelled. What are our options?"),
        (
            "assistant",
            "Under EU261 you can choose rerouting at no cost or a full refund. Since they told you less than "
            "14 days before departure, you can also claim €400 per person (1,500–3,500 km band) unless they "
            "cite extraordinary circumstances.",
        ),
        ("user", "What rerouting do they offer?"),
        (
            "assistant",
            "TAP offers OPO→LIS→MUC on 6 Oct arriving 21:50, or the direct flight on Wednesday 7 Oct at "
            "13:20. Lufthansa has OPO→FRA→MUC on 6 Oct arriving 19:05, which TAP can rebook as a Star "
            "Alliance partner.",
        ),
        ("user", "I have a meeting Wednesday morning. The Frankfurt option is best."),
        (
            "assistant",
            "I'll request LH1177 OPO→FRA 13:55 and LH106 FRA→MUC 18:00; 1 h 05 min to connect in "
            "Frankfurt, same terminal.",
        ),
        ("user", "Do it. Aisle and window as usual."),
        (
            "assistant",
            "Done through TAP's manage-booking. Seats 23C/23A on LH1177 and 12C/12A on LH106. New e-tickets "
            "are in your inbox.",
        ),
        ("user", "And file the compensation claim."),
        (
            "assistant",
            "Filed the EU261 claim with TAP, reference TP-CLM-5521783, for €800 (2 × €400). TAP usually "
            "answers within 30 days; if they refuse, we can escalate to ANAC in Portugal.",
        ),
        ("user", "Thanks. Remind me in 30 days if nothing comes."),
        ("assistant", "Reminder set for 28 Oct to check the claim."),
    ],
)

session(
    "tomas",
    "tomas-s06",
    "11-18 20:30",
    [
        ("user", "We're back from Japan. Can you tally what we spent against the plan?"),
        (
            "assistant",
            "From your card exports: flights €2,160, ryokan €840, machiya €1,395 (a €45 cleaning fee was "
            "added), tour €205, local transport €212, food and extras €1,410. Total €6,222: €342 over the "
            "€5,880 plan, still under the €6,500 cap.",
        ),
        ("user", "Food was the overrun, yes. The vegetarian kaiseki was worth every yen."),
        (
            "assistant",
            "Noted. I'll record Ryokan Motonago as a recommended stay; they handled the no-seafood dinners very well.",
        ),
        ("user", "The Himeji day trip was too long though. Three hours on trains for two hours at the castle."),
        (
            "assistant",
            "Noted for the future: avoid day trips where transit exceeds time on site. Himeji works better "
            "as a stop on the way to Hiroshima.",
        ),
        ("user", "Anything still pending money-wise?"),
        (
            "assistant",
            "The TAP claim (€800) was approved on 27 Oct and paid on 9 Nov. The machiya host still owes the "
            "€50 key deposit.",
        ),
        ("user", "Chase the key deposit please."),
        ("assistant", "Sent a polite reminder to the machiya host through the booking platform."),
        ("user", "Let's think about spring. Somewhere warm in March, ideally by rail."),
        (
            "assistant",
            "By rail from Munich: Nice via Zurich and Milan (about 9 h) or Lake Garda (5 h 30 min, but cool "
            "in March). For real warmth, Sicily or Madeira need a flight. I'll compare them next week.",
        ),
    ],
)

session(
    "tomas",
    "tomas-s05",
    "11-28 18:40",
    [
        ("user", "Christmas markets: Vienna 18–21 December with Lucía. My parents join from Brno on the 19th."),
        (
            "assistant",
            "Lovely. Munich→Vienna by Railjet is 4 h; Brno→Vienna about 1 h 30 min. Markets: Spittelberg "
            "(crafts, less touristy), Am Hof, Karlsplatz (art and organic), Schönbrunn and Rathausplatz.",
        ),
        ("user", "My parents are in their seventies and dad walks with a cane. Keep the walking moderate."),
        (
            "assistant",
            "Then base yourselves in the 7th district near Spittelberg, use tram 49 and the U3, and do one or "
            "two markets a day with café breaks. Schönbrunn's paths are mostly flat and step-free.",
        ),
        ("user", "Hotel for four, two rooms, under €200 per room per night."),
        (
            "assistant",
            "Options: Hotel Altstadt Vienna (€189, Neubau, lift, near Spittelberg), Motel One "
            "Wien-Staatsoper (€139, central but busy) and 25hours beim MuseumsQuartier (€179). Altstadt has "
            "the most character and a step-free entrance.",
        ),
        ("user", "Altstadt. Two rooms: three nights for us, two for my parents."),
        (
            "assistant",
            "Booked Hotel Altstadt Vienna: room 1 for 18–21 Dec, room 2 for 19–21 Dec. €1,323 total, free "
            "cancellation until 11 Dec.",
        ),
        ("user", "Trains for us: Munich on the 18th in the morning, back on the 21st in the afternoon."),
        (
            "assistant",
            "ÖBB Sparschiene: RJX 61 Munich 09:25 → Vienna 13:25 on 18 Dec and RJX 66 Vienna 14:30 → "
            "Munich 18:35 on 21 Dec, €39.90 per person each way with seats. €159.60 in total.",
        ),
        ("user", "Book them. And a dinner on the 19th with my parents: Austrian food, nothing seafood-heavy."),
        (
            "assistant",
            "Plachutta was full, so I reserved Gasthaus Pöschl near Franziskanerplatz for 4 at 19:00 on "
            "19 Dec: Wiener Schnitzel, Tafelspitz, good vegetable sides.",
        ),
        ("user", "What's the total so far?"),
        (
            "assistant",
            "Hotel €1,323 + trains €159.60 = €1,482.60. Your parents buy their own train. Of the €2,000 "
            "budget, €517.40 is left for food, markets and local transport.",
        ),
    ],
)

# ------------------------------------------------------------------------------------------------- mira ---
MIRA_SYS = (
    "You are Mira's research assistant. Mira is a third-year PhD student in ecology working on "
    "plant–pollinator networks in the Swiss Alps. Cite as author-year with DOI when known."
)

session(
    "mira",
    "mira-s01",
    "06-05 13:00",
    [
        ("system", MIRA_SYS),
        ("user", "I need the key papers on robustness of plant–pollinator networks to species loss. Classics first."),
        (
            "assistant",
            "Core classics: Memmott, Waser & Price 2004 on the tolerance of pollination networks to species "
            "extinctions; Dunne, Williams & Martinez 2002 for the R50 robustness idea in food webs; Burgos "
            "et al. 2007 linking nestedness and robustness; Kaiser-Bunbury et al. 2010 on rewiring.",
        ),
        ("user", "Good. Anything on elevation gradients specifically?"),
        (
            "assistant",
            "Benadi et al. 2014 on specialization and phenological synchrony along an altitudinal gradient, "
            "and Hoiss et al. 2015 on elevation and extreme climate events in plant–pollinator networks.",
        ),
        (
            "user",
            "For the intro I prefer papers after 2015 except the real classics. And no preprints unless there's "
            "nothing else.",
        ),
        (
            "assistant",
            "Understood. I'll query Web of Science with TS=(pollinat* AND network* AND (robust* OR "
            "extinction*) AND (elevation OR altitud*)), years 2015–2026, peer-reviewed only.",
        ),
        ("user", "Run it and give me counts."),
        ("assistant", "143 records; 61 after removing reviews, conference abstracts and non-English papers."),
        ("user", "Export them to Zotero, collection Ch1-robustness."),
        ("assistant", "Exported 61 records to Ch1-robustness with Better BibTeX citekeys in authorYear format."),
        ("user", "Can you screen the abstracts for ones that actually simulate species loss?"),
        (
            "assistant",
            "Of the 61: 23 run extinction simulations, 9 of those include rewiring, and 5 use empirical "
            "elevation gradients. Tagged in Zotero as sim, rewiring and elev. I'll summarise the 5 "
            "elevation papers next, one paragraph each, using your summary template.",
        ),
    ],
)

session(
    "mira",
    "mira-s02",
    "07-14 07:30",
    [
        ("user", "Field season starts next week. Remind me of the transect protocol we agreed."),
        (
            "assistant",
            "Protocol v3: 6 elevation bands from 1,400 to 2,600 m, three 50 m transects per band, "
            "15-minute observation walks between 09:30 and 16:00, only above 13°C, wind below Beaufort 3 and "
            "no rain. Record every flower visit with plant species and visitor morphotype; net unknowns.",
        ),
        ("user", "Samuel says this year he can only identify bees and hoverflies, not other flies."),
        (
            "assistant",
            "Then morphotype all other Diptera and keep them in 70% ethanol for an external taxonomist. "
            "I'll add a Diptera morphotype column to the datasheet.",
        ),
        ("user", "Weather next week at the upper bands?"),
        (
            "assistant",
            "MeteoSwiss for 2,300 m: Monday–Tuesday sunny, 14–18°C; Wednesday thunderstorms after 13:00; "
            "Thursday–Friday unsettled. Do the highest bands on Monday and Tuesday.",
        ),
        ("user", "I need the permit number for insect collection."),
        (
            "assistant",
            "Permit ANU-2026-0417 from the Amt für Natur und Umwelt Graubünden, valid until 30 September "
            "2026. Carry a printed copy.",
        ),
        ("user", "Is the car booked?"),
        ("assistant", "The department Mobility car is booked 20–24 July, pickup at Irchel at 05:45."),
        ("user", "Print 40 datasheets then."),
        ("assistant", "Datasheet v4 (with the Diptera column) sent to printer BIO-3F, 40 copies, double-sided."),
        ("user", "And note that I'm in the field 20–24 July, no email."),
        ("assistant", "Noted. I drafted an out-of-office reply for you to switch on."),
    ],
)

session(
    "mira",
    "mira-s03",
    "09-10 15:00",
    [
        ("user", "Visit counts per transect have tons of zeros and the Poisson GLMM fits badly. What now?"),
        (
            "assistant",
            "Check with DHARMa first: simulateResiduals(), then testDispersion() and testZeroInflation(). "
            "If both flag, move to glmmTMB with a negative binomial family and a zero-inflation term.",
        ),
        ("user", "Dispersion test p < 0.001, zero-inflation p = 0.002."),
        (
            "assistant",
            "Fit glmmTMB(visits ~ elevation_s * temp_s + (1|site/transect) + (1|date), ziformula = "
            "~elevation_s, family = nbinom2, offset = log(minutes)) with elevation and temperature "
            "standardised.",
        ),
        ("user", "It converged with a warning: non-positive-definite Hessian."),
        (
            "assistant",
            "Usually an over-complex random structure; (1|date) probably has near-zero variance. Drop it, "
            "or simplify ziformula to ~1, then compare by AIC.",
        ),
        ("user", "Dropping (1|date) fixed it. AIC 2,314 vs 2,389 for the Poisson."),
        (
            "assistant",
            "A 75-point drop is decisive. Rerun DHARMa on the new model and report the conditional and "
            "zero-inflation parts separately.",
        ),
        ("user", "Residuals look fine now. How do I report the elevation effect?"),
        (
            "assistant",
            "The coefficient −0.41 is per SD of elevation (about 390 m): exp(−0.41) ≈ 0.66, so about 34% "
            "fewer visits per SD. Use ggeffects::ggpredict for the figure.",
        ),
        ("user", "Great. Save the model spec for the methods section."),
        ("assistant", "Saved formula, DHARMa checks and the AIC comparison under 'Ch2 visitation model'."),
    ],
)

session(
    "mira",
    "mira-s04",
    "10-22 10:10",
    [
        ("user", "I'm drafting the Ch2 introduction. Outline it in four paragraphs?"),
        (
            "assistant",
            "1) Pollination and climate-driven shifts in mountains; 2) network structure and why elevation "
            "changes specialisation; 3) the gap: few studies combine visitation rates with fine-scale "
            "temperature; 4) aims and hypotheses H1–H3.",
        ),
        ("user", "Katrin wants the gap sharper. She says everyone writes 'few studies'."),
        (
            "assistant",
            "Quantify it: in your 61-paper screen only 5 combined elevation gradients with extinction "
            "simulations, and none modelled visitation with on-site temperature. State the numbers.",
        ),
        ("user", "Nice. The target journal is Oikos now, not Ecology Letters."),
        (
            "assistant",
            "Oikos uses author-year citations. In Quarto I'll set csl: oikos.csl and keep Better BibTeX "
            "auto-exporting references.bib.",
        ),
        ("user", "references.bib has duplicates, Quarto warns on build."),
        (
            "assistant",
            "14 duplicate pairs, mostly the same DOI under two citekeys (e.g. hoiss2015 and hoiss2015a). I "
            "can merge by DOI and keep the older key so existing citations don't break.",
        ),
        ("user", "Show me the list first."),
        (
            "assistant",
            "hoiss2015/hoiss2015a, memmott2004/memmott2004tolerance, benadi2014/benadi2014a and 11 more. "
            "Keeping the first key of each pair means rewriting 6 citations in ch2.qmd.",
        ),
        ("user", "Go."),
        ("assistant", "Merged 14 duplicates and rewrote 6 citations; Quarto renders without warnings."),
        ("user", "Word count of the intro?"),
        ("assistant", "1,180 words. Oikos introductions are usually 800–1,000, so aim to cut about 200."),
    ],
)

session(
    "mira",
    "mira-s05",
    "11-29 09:00",
    [
        ("user", "Committee meeting is on 10 December. I need a 15-minute talk. Help me structure the slides."),
        (
            "assistant",
            "For 15 minutes, 12 slides: title; thesis overview; 3 on Ch2 results (visitation model, "
            "elevation effect, specialisation); 2 on Ch3 status; 2 on Ch4 plans; timeline; open questions; "
            "one backup.",
        ),
        ("user", "Committee is Katrin, the external member from WSL, and Prof. Adler from ETH."),
        (
            "assistant",
            "The WSL member will likely ask about climate covariates, so keep the temperature-resolution "
            "slide ready as backup.",
        ),
        ("user", "For Ch3, my co-author still has the sequencing data. I'm waiting for the OTU table."),
        ("assistant", "Then show Ch3 as 'data pending' with a concrete date. When do you expect the table?"),
        ("user", "Mid-December. And the reviewer response for the Ch1 paper is due 15 December."),
        (
            "assistant",
            "Two deadlines in one week. Suggestion: slides draft by 3 Dec, response draft by 6 Dec, lab "
            "rehearsal on 8 Dec.",
        ),
        ("user", "Reviewer 2 wants a sensitivity analysis with different extinction orders."),
        (
            "assistant",
            "Rerun the simulations with three orders (random, most-to-least connected, least-to-most "
            "connected), 1,000 iterations each with bipartite::second.extinct, and report R50 per order.",
        ),
        ("user", "How long on my laptop?"),
        ("assistant", "About 40 minutes for the 12 networks per order on 8 cores with parallel::mclapply."),
        ("user", "Laptop is fine. Start a draft of the response letter."),
        (
            "assistant",
            "Started the letter from your reviewer-response template: each comment quoted, our response, "
            "and changes with line numbers. R2.3 already has the sensitivity plan.",
        ),
    ],
)


# ============================================================================================================
# SEMANTIC ITEMS. I(user, category, date, importance, content, ...). Ids are assigned in order per user
# (ada-item-001, ...). key= names an item so two-hop questions / feedback / forget entries can refer to it.
# ============================================================================================================
ITEMS: list[dict] = []


def I(user, category, date, importance, content, *, ev=False, key=None, archived=None, src=None, conf=None, pre=None):
    ITEMS.append(
        dict(
            user=user,
            category=category,
            date=date,
            importance=importance,
            content=content,
            evergreen=ev,
            key=key,
            archived=archived,
            src=src,
            conf=conf,
            pre=pre,
        )
    )


def chat(user, category, importance, turns):
    """A short exchange, one item per turn, each reply stored with the turn it answers as its preceding text
    (dates carry a time so the turns keep their order)."""
    before = None
    for date, text in turns:
        I(user, category, date, importance, text, src="conversation", pre=before)
        before = text


# ------------------------------------------------------------------------------------------------- ada ----
A = "ada"
I(
    A,
    "preferences",
    "06-10",
    0.7,
    "Ada prefers ruff for both linting and formatting; black was dropped from paylane-core in early June 2026.",
    key="ada-ruff",
)
I(A, "preferences", "06-10", 0.85, "Always run mypy --strict locally before proposing a diff.", ev=True, key="ada-mypy")
I(A, "preferences", "06-10", 0.7, "Never use print() in services; log with structlog and bind request_id.")
I(
    A,
    "preferences",
    "06-10",
    0.6,
    "PR descriptions stay short: a two-line Summary and a Testing section, no emoji.",
    key="ada-prdesc",
)
I(A, "preferences", "06-14", 0.5, "Branch names follow fix/<topic>, feat/<topic> or chore/<topic>.")
I(
    A,
    "preferences",
    "06-26",
    0.6,
    "Ada prefers small pull requests under 300 changed lines and splits bigger changes into a stack.",
)
I(A, "preferences", "07-08", 0.4, "Ada likes pytest.mark.parametrize instead of copy-pasted test functions.")
I(
    A,
    "preferences",
    "11-29",
    0.5,
    "In TypeScript, format money with Intl.NumberFormat rather than hand-written currency tables.",
)
I(
    A,
    "preferences",
    "10-15",
    0.8,
    "Show the exact command before running anything against staging or production.",
    key="ada-showcmd",
)
I(
    A,
    "preferences",
    "08-03",
    0.3,
    "Ada starts around 09:00 CET and takes lunch from 12:30 to 13:30; avoid "
    "long-running jobs that need her input then.",
)
I(
    A,
    "project_facts",
    "06-02",
    0.9,
    "paylane-core is a Python 3.12 monorepo using FastAPI, SQLAlchemy 2.0 and Postgres 15.",
    ev=True,
)
I(
    A,
    "project_facts",
    "06-05",
    0.7,
    "The checkout SDK lives in packages/checkout-sdk, targets ES2020 and is built with tsup.",
)
I(
    A,
    "project_facts",
    "09-03",
    0.7,
    "The checkout SDK has a bundle budget of 40 kB gzipped; it measured 37.9 kB after paymentMethod.ts moved to zod.",
    key="ada-bundle",
)
I(
    A,
    "project_facts",
    "09-03",
    0.6,
    "SDK runtime validation is moving from io-ts to zod: paymentMethod.ts is "
    "done; session.ts, threeDS.ts and client.ts remain.",
)
I(
    A,
    "project_facts",
    "06-10",
    0.7,
    "CI runs ruff check, ruff format --check, mypy --strict and pytest with 4 xdist workers and an 85% coverage floor.",
)
I(
    A,
    "project_facts",
    "06-10",
    0.95,
    "Money is Decimal in code and integer minor units in the database; round once at the end with ROUND_HALF_EVEN.",
    ev=True,
    key="ada-money",
)
I(A, "project_facts", "07-22", 0.7, "Idempotency keys expire after 24 hours in production.", key="ada-ttl")
I(A, "project_facts", "10-15", 0.5, "The payouts table holds about 90 million rows.")
I(
    A,
    "project_facts",
    "11-12",
    0.8,
    "Adyen notifications are deduplicated on (pspReference, eventCode, success) since PR #471.",
    key="ada-dedupe",
)
I(
    A,
    "project_facts",
    "11-12",
    0.8,
    "Outbox rows must be written in the same transaction as the state change they announce.",
)
I(
    A,
    "project_facts",
    "10-15",
    0.6,
    "The nightly payout_batcher holds FOR UPDATE SKIP LOCKED transactions on "
    "payouts for minutes; pause it with the flag payouts.batcher.enabled.",
    key="ada-batcher",
)
I(
    A,
    "project_facts",
    "07-02",
    0.5,
    "Feature flags are managed with flagctl; environments are staging-eu, staging-us, prod-eu and prod-us.",
)
I(
    A,
    "project_facts",
    "11-29",
    0.4,
    "Dashboard money formatting lives in packages/dashboard/src/format/money.ts and compact.ts.",
)
I(A, "project_facts", "06-05", 0.5, "Frontend packages use pnpm workspaces and vitest.")
I(
    A,
    "project_facts",
    "11-29",
    0.6,
    "ISO 4217 exponents: JPY and KRW have 0 minor units, KWD and BHD have 3, most others 2.",
    ev=True,
)
I(A, "project_facts", "08-11", 0.75, "The refund reconciliation job is owned by Priya Raman.", key="ada-q1-a")
I(A, "project_facts", "09-09", 0.7, "The checkout retry policy is maintained by the Kestrel squad.", key="ada-q2-a")
I(
    A,
    "project_facts",
    "10-06",
    0.7,
    "The service that computes merchant payout fees is codenamed Osprey.",
    key="ada-q3-a",
)
I(
    A,
    "project_facts",
    "06-02",
    0.6,
    "Providers: Adyen for EU cards, Stripe for US cards, SEPA Direct Debit through the bank API.",
)
I(A, "project_facts", "06-20", 0.4, "Alembic migrations live in migrations/versions with date-prefixed file names.")
I(
    A,
    "project_facts",
    "11-29",
    0.5,
    "Open after draft PR #498: confirm the CSV export uses the shared money formatter; decide code vs symbol for KWD.",
)
I(
    A,
    "people",
    "07-22",
    0.6,
    "Marco Bianchi reviews test-infrastructure PRs and is designing per-worker test databases.",
)
I(A, "people", "08-12", 0.6, "Priya Raman is based in Bangalore and joins standups at 10:30 IST.", key="ada-q1-b")
I(
    A,
    "people",
    "09-12",
    0.6,
    "Kestrel is led by Daniel Osei, who approves every merge into their repositories.",
    key="ada-q2-b",
)
I(A, "people", "06-24", 0.6, "Sofia Lindqvist is the engineering manager and approves production migration windows.")
I(A, "people", "11-29", 0.4, "Dashboard design questions go to Hana Kim.")
I(A, "people", "11-12", 0.3, "Merchant escalations usually arrive via Tom Okafor in merchant support.")
I(
    A,
    "infrastructure",
    "10-07",
    0.6,
    "Osprey is deployed to eu-central-1 on EKS with a read replica in eu-west-1.",
    key="ada-q3-b",
)
I(
    A,
    "infrastructure",
    "07-02",
    0.5,
    "Staging databases are reachable read-only through $STAGING_EU_RO; writes need a break-glass role.",
)
I(
    A,
    "infrastructure",
    "08-19",
    0.3,
    "Codecov uploads were disabled in August 2026 to save CI minutes; coverage is checked by pytest-cov only.",
)
I(
    A,
    "infrastructure",
    "06-12",
    0.3,
    "Old note: the staging database host was pg-staging-01.internal.",
    archived="10-30 09:00",
    key="ada-old-host",
)
I(
    A,
    "conventions",
    "10-15",
    0.8,
    "Migrations always set lock_timeout = '3s' and a statement_timeout.",
    key="ada-locktimeout",
)
I(A, "conventions", "10-15", 0.7, "Indexes on large tables use CREATE INDEX CONCURRENTLY inside an autocommit block.")
I(
    A,
    "conventions",
    "10-15",
    0.85,
    "Production migrations run only in the Tuesday 06:00 UTC maintenance window.",
    key="ada-window",
)
I(A, "conventions", "07-22", 0.6, "Tests never hard-code idempotency keys; fixtures generate them with uuid4.")
I(A, "conventions", "09-03", 0.5, "Zod schemas export inferred types under the same names as the old io-ts types.")
I(
    A,
    "conventions",
    "09-03",
    0.4,
    "Use .default() rather than .optional() in zod where the io-ts codec was required with a default.",
)
I(A, "conventions", "06-14", 0.3, "Commit subjects are imperative and at most 72 characters.")
I(
    A,
    "conventions",
    "06-03",
    0.2,
    "Code style: black with line length 100.",
    archived="10-30 09:00",
    key="ada-old-black",
)
I(A, "conventions", "06-10", 0.4, "ruff selects the E, F, I, B, UP and SIM rule sets with line length 100.")
I(
    A,
    "incidents",
    "11-12",
    0.8,
    "2026-11-12: 37 captures sent duplicate confirmation emails because Adyen "
    "retries were deduplicated on our internal event id; no double charges.",
    key="ada-inc-webhook",
)
I(
    A,
    "incidents",
    "07-22",
    0.5,
    "July 2026 flaky test_idempotent_capture came from xdist workers sharing the constant key 'test-key-1'.",
)
I(
    A,
    "incidents",
    "10-15",
    0.5,
    "2026-10-15: the staging-eu migration hit the 3 s lock timeout while payout_batcher held locks for 7 minutes.",
)
I(
    A,
    "incidents",
    "06-10",
    0.6,
    "Partial refunds were off by one cent because line items were rounded before summing; fixed in PR #311.",
)
I(
    A,
    "incidents",
    "11-29",
    0.6,
    "JPY amounts showed a decimal in the dashboard (toFixed(1) for all currencies); fix in draft PR #498.",
)
I(
    A,
    "constraints",
    "06-02",
    0.9,
    "Never push directly to main; every change goes through a PR with one approval.",
    ev=True,
    key="ada-nomain",
)
I(
    A,
    "constraints",
    "06-02",
    1.0,
    "No card numbers (PAN) or CVV may appear in logs, fixtures or prompts.",
    ev=True,
    key="ada-pan",
)
I(
    A,
    "constraints",
    "07-02",
    0.8,
    "The agent may run read-only queries on staging; writes need explicit approval from Ada.",
)
I(A, "constraints", "06-10", 0.5, "Line coverage for src/paylane must stay at or above 85%.")
I(A, "constraints", "09-03", 0.5, "The checkout SDK must keep working on Safari 14 and later.")
I(
    A,
    "constraints",
    "07-22",
    0.4,
    "Per-worker test databases (PYTEST_XDIST_WORKER) are postponed until Marco's design is ready.",
)

# ------------------------------------------------------------------------------------------------ tomas ---
T = "tomas"
I(
    T,
    "preferences",
    "06-18",
    0.85,
    "Tomas prefers rail for journeys under about 6 hours and flies otherwise.",
    ev=True,
    key="tom-rail",
)
I(T, "preferences", "06-18", 0.75, "Tomas always takes an aisle seat; Lucía prefers the window.", key="tom-seats")
I(T, "preferences", "06-18", 0.6, "They travel with cabin bags only, never checked luggage.")
I(T, "preferences", "06-18", 0.6, "Prefers characterful or boutique hotels over big chains.")
I(T, "preferences", "07-30", 0.4, "In mountain huts, dorms are fine when private rooms cost much more.")
I(T, "preferences", "08-25", 0.6, "Likes slow travel: one base with day trips instead of frequent hotel changes.")
I(
    T,
    "preferences",
    "11-18",
    0.6,
    "Avoid day trips where transit time exceeds time spent at the destination.",
    key="tom-daytrip",
)
I(T, "preferences", "07-05", 0.3, "Prefers morning departures that arrive by lunchtime.")
I(T, "preferences", "10-07", 0.3, "Tomas enjoys port wine; the Graham's tasting in Gaia was a highlight.")
I(T, "preferences", "06-01", 0.8, "Home airport is Munich (MUC); home station is München Hbf.", ev=True)
I(T, "preferences", "06-18", 0.2, "Lucía prefers aisle seats.", archived="08-26 09:30", key="tom-old-seat")
I(T, "people", "06-18", 0.9, "Lucía is Tomas's partner and does not eat seafood.", ev=True, key="tom-lucia")
I(T, "people", "08-02", 0.7, "The friend joining the Dolomites trek is Lukas Berger.", key="tom-q5-a")
I(T, "people", "08-04", 0.7, "Lukas Berger has a severe bee-sting allergy and always packs an EpiPen.", key="tom-q5-b")
I(T, "people", "10-29", 0.6, "Haruto Sato studied in Salamanca for six years and is fluent in Spanish.", key="tom-q4-b")
I(T, "people", "11-28", 0.7, "Tomas's parents live in Brno and are in their seventies; his father walks with a cane.")
I(T, "people", "06-20", 0.5, "Tomas speaks Czech, German and English, plus some Spanish.")
I(T, "people", "11-18", 0.5, "Lucía's birthday is 14 March; a warm trip around then would be a good present.")
I(
    T,
    "travel_plans",
    "06-18",
    0.6,
    "Portugal long weekend, 2–6 October 2026: two nights Lisbon, train to Porto, two nights Porto.",
)
I(
    T,
    "travel_plans",
    "07-30",
    0.7,
    "Alta Via 1 northern section, 12–16 September 2026: Lago di Braies → Biella → "
    "Fanes → Lagazuoi → Averau → Passo Giau.",
)
I(
    T,
    "travel_plans",
    "10-28",
    0.7,
    "The Kyoto temple tour on the morning of day three is led by guide Haruto Sato.",
    key="tom-q4-a",
)
I(
    T,
    "travel_plans",
    "08-25",
    0.7,
    "Japan, 2–14 November 2026: 11 nights in Kyoto with day trips to Nara, Osaka and Himeji; no Tokyo.",
)
I(
    T,
    "travel_plans",
    "08-25",
    0.2,
    "Idea: end the Japan trip with 3 nights in Tokyo.",
    archived="08-26 09:30",
    key="tom-old-tokyo",
)
I(
    T,
    "travel_plans",
    "11-28",
    0.85,
    "Vienna Christmas markets, 18–21 December 2026, with Lucía; Tomas's parents join from Brno on the 19th.",
    key="tom-vienna",
)
I(
    T,
    "travel_plans",
    "11-28",
    0.5,
    "Vienna pacing: one or two markets a day (Spittelberg, Am Hof, Karlsplatz, "
    "Schönbrunn) with café breaks; tram 49 and U3.",
)
I(
    T,
    "travel_plans",
    "11-18",
    0.5,
    "Spring 2027: somewhere warm in March, ideally by rail; compare Nice, Lake Garda, Sicily and Madeira.",
)
I(
    T,
    "travel_plans",
    "07-30",
    0.5,
    "Alta Via variant: ride the Lagazuoi cable car down to Passo Falzarego to skip about 650 m of descent on scree.",
)
I(
    T,
    "travel_plans",
    "07-30",
    0.5,
    "To Lago di Braies: train Munich–Innsbruck–Fortezza–Dobbiaco (about 5 h 10 min), then bus 442.",
)
I(
    T,
    "bookings",
    "08-25",
    0.6,
    "Japan flights: LH714 MUC→HND on 2 Nov (34C/34A) and Finnair KIX→HEL→MUC on 14 Nov (41C/41A); €2,160 total.",
)
I(T, "bookings", "08-28", 0.5, "Ryokan Motonago, Higashiyama: 2 nights with vegetarian kaiseki, about €420 per night.")
I(
    T,
    "bookings",
    "08-29",
    0.5,
    "Machiya rental near Shijo-Kawaramachi: 9 nights at about €150 per night plus a €50 key deposit.",
)
I(T, "bookings", "06-18", 0.4, "Memmo Alfama, Lisbon: 2–4 October 2026.")
I(T, "bookings", "06-18", 0.3, "Graham's cellar tasting in Vila Nova de Gaia: Monday 5 October, 11:00, €30 per person.")
I(
    T,
    "bookings",
    "09-28",
    0.5,
    "Return from Porto rerouted to LH1177 OPO→FRA and LH106 FRA→MUC on 6 October after the TAP cancellation.",
)
I(
    T,
    "bookings",
    "11-28",
    0.75,
    "Hotel Altstadt Vienna: room 1 for 18–21 Dec, room 2 for 19–21 Dec; €1,323, free cancellation until 11 Dec.",
    key="tom-altstadt",
)
I(
    T,
    "bookings",
    "11-28",
    0.6,
    "Trains: RJX 61 Munich 09:25 → Vienna 13:25 on 18 Dec, RJX 66 Vienna 14:30 → "
    "Munich 18:35 on 21 Dec; €159.60 for two.",
)
I(T, "bookings", "11-28", 0.5, "Dinner at Gasthaus Pöschl for 4 on 19 December at 19:00.")
I(
    T,
    "bookings",
    "08-06",
    0.4,
    "All four huts confirmed by email: Biella, Fanes, Lagazuoi and Averau, dorm with half board.",
)
I(
    T,
    "budget",
    "11-18",
    0.6,
    "Japan: cap €6,500 for two, planned €5,880, actual €6,222 (food was the overrun).",
    key="tom-japan-budget",
)
I(T, "budget", "11-28", 0.7, "Vienna budget €2,000; €1,482.60 committed as of 28 Nov, €517.40 left.")
I(T, "budget", "07-30", 0.5, "Mountain huts are mostly cash-only: plan €100 per person per day.", key="tom-cash")
I(T, "budget", "08-25", 0.4, "A JR Pass was not worth it for a Kyoto-based trip; ICOCA cards instead.")
I(
    T,
    "constraints",
    "09-28",
    0.5,
    "Tomas has a work meeting most Wednesday mornings; avoid returning on a Wednesday morning.",
)
I(T, "constraints", "07-30", 0.4, "Huts require a sleeping-bag liner.")
I(T, "constraints", "11-28", 0.6, "Keep walking moderate and step-free when Tomas's parents are along.")
I(T, "documents", "09-28", 0.5, "EU261 claim TP-CLM-5521783 for €800: approved 27 Oct, paid 9 Nov 2026.")
I(T, "documents", "06-01", 0.6, "Tomas holds a Czech passport valid until 2031.", ev=True)
I(T, "documents", "08-25", 0.5, "Lucía has a Spanish passport; neither needs a visa for short stays in Japan.")
I(T, "documents", "06-01", 0.5, "Tomas has a BahnCard 25 valid until March 2027.")
I(T, "documents", "07-30", 0.5, "Annual ERGO travel insurance covers hiking up to 3,000 m.")
I(
    T,
    "recommendations",
    "11-18",
    0.5,
    "Ryokan Motonago is a recommended stay; vegetarian kaiseki on request worked well.",
    key="tom-ryokan",
)
I(T, "recommendations", "11-28", 0.3, "Gasthaus Pöschl near Franziskanerplatz serves classic Viennese food.")
I(
    T,
    "recommendations",
    "06-18",
    0.3,
    "Prado in Lisbon is a good farm-to-table restaurant without a seafood-heavy menu.",
)
I(
    T,
    "recommendations",
    "11-18",
    0.4,
    "Himeji works better as a stop on the way to Hiroshima than as a day trip from Kyoto.",
    key="tom-himeji",
)
I(T, "recommendations", "10-07", 0.3, "Alfama is hilly with many stairs; not for Tomas's parents.")

# ------------------------------------------------------------------------------------------------- mira ---
M = "mira"
I(
    M,
    "preferences",
    "06-05",
    0.6,
    "Mira prefers papers published after 2015 for introductions, except true classics.",
    key="mira-post2015",
)
I(M, "preferences", "06-05", 0.6, "Peer-reviewed sources over preprints unless nothing else exists.")
I(M, "preferences", "06-01", 0.5, "Cite as author-year with DOI when known.", ev=True)
I(
    M,
    "preferences",
    "06-01",
    0.7,
    "The thesis is written in Quarto with Zotero and Better BibTeX (authorYear citekeys).",
)
I(
    M,
    "preferences",
    "06-05",
    0.6,
    "Paper summaries follow: question, system, methods, key result, relevance to the chapter.",
    key="mira-template",
)
I(M, "preferences", "06-08", 0.5, "Mira uses R and the tidyverse for statistics, not Python.")
I(M, "preferences", "09-10", 0.3, "Figures in ggplot2 with theme_classic and the viridis palette.")
I(M, "preferences", "07-14", 0.3, "Lab matters go through Slack; no email while in the field.")
I(
    M,
    "thesis",
    "06-01",
    0.9,
    "Thesis title: Plant–pollinator networks along elevation gradients in the Swiss Alps.",
    ev=True,
    key="mira-title",
)
I(M, "thesis", "11-29", 0.8, "The Ch1 simulation paper is in major revision at Basic and Applied Ecology.")
I(M, "thesis", "06-01", 0.7, "Ch2 measures flower visitation along a 1,400–2,600 m gradient.")
I(M, "thesis", "10-22", 0.6, "Ch2 target journal is Oikos.", key="mira-oikos")
I(M, "thesis", "06-01", 0.3, "Ch2 target journal is Ecology Letters.", archived="10-22 11:00", key="mira-old-journal")
I(
    M,
    "thesis",
    "11-29",
    0.6,
    "Ch3 links belowground microbial communities to floral traits; the OTU table is expected mid-December.",
)
I(
    M,
    "thesis",
    "09-18",
    0.6,
    "Ch4 measures heat tolerance (CTmax) of Bombus workers under experimental heating; the pilot runs in summer 2027.",
)
I(M, "thesis", "09-20", 0.7, "The bumblebee warming experiment uses the field station at Alp Flix.", key="mira-q6-a")
I(M, "thesis", "07-03", 0.65, "The soil microbiome paper is co-authored with Elena Petrova.", key="mira-q7-a")
I(M, "thesis", "10-22", 0.4, "The Ch2 introduction was 1,180 words; Oikos introductions are usually 800–1,000.")
I(
    M,
    "thesis",
    "10-22",
    0.6,
    "Katrin wants the gap quantified: only 5 of 61 screened papers combine elevation "
    "gradients with extinction simulations.",
    key="mira-gap",
)
I(M, "thesis", "06-15", 0.8, "Planned thesis submission: September 2027.")
I(M, "thesis", "10-22", 0.4, "Quarto uses csl: oikos.csl for citations.")
I(
    M,
    "methods",
    "07-14",
    0.8,
    "Transect protocol v3: 6 bands from 1,400 to 2,600 m, three 50 m transects per "
    "band, 15-min walks 09:30–16:00, above 13°C, wind below Beaufort 3, no rain.",
    key="mira-protocol",
)
I(M, "methods", "07-14", 0.5, "Diptera other than hoverflies are morphotyped and stored in 70% ethanol.")
I(
    M,
    "methods",
    "09-10",
    0.8,
    "Visitation model: glmmTMB, nbinom2, ziformula ~elevation_s, random "
    "(1|site/transect), offset log(minutes); (1|date) dropped for convergence.",
    key="mira-model",
)
I(M, "methods", "09-10", 0.6, "Check overdispersion and zero inflation with DHARMa before choosing a family.", ev=True)
I(M, "methods", "09-10", 0.7, "Elevation effect: −0.41 per SD (about 390 m), i.e. about 34% fewer visits per SD.")
I(M, "methods", "09-10", 0.4, "Negative binomial GLMM AIC 2,314 vs Poisson 2,389.")
I(
    M,
    "methods",
    "06-12",
    0.6,
    "Robustness simulations use bipartite::second.extinct with 1,000 iterations and the R50 metric.",
)
I(
    M,
    "methods",
    "11-29",
    0.6,
    "Sensitivity analysis: three extinction orders (random, most-to-least connected, least-to-most connected).",
)
I(
    M,
    "methods",
    "09-24",
    0.4,
    "Use ggeffects::ggpredict for marginal-effect plots; set the offset to 15 minutes when predicting.",
)
I(M, "methods", "09-10", 0.5, "Standardise continuous predictors (elevation, temperature) before fitting.")
I(
    M,
    "methods",
    "06-05",
    0.5,
    "Web of Science query TS=(pollinat* AND network* AND (robust* OR extinction*) AND "
    "(elevation OR altitud*)), 2015–2026: 143 hits, 61 kept.",
)
I(
    M,
    "literature",
    "06-05",
    0.7,
    "Memmott, Waser & Price 2004 is the classic study of pollination network tolerance to species extinctions.",
    key="mira-memmott",
)
I(M, "literature", "06-05", 0.5, "Burgos et al. 2007 link nestedness to robustness against extinctions.")
I(M, "literature", "06-05", 0.6, "Kaiser-Bunbury et al. 2010 show that rewiring can buffer extinction cascades.")
I(M, "literature", "06-05", 0.5, "Dunne, Williams & Martinez 2002 introduced the R50 robustness measure for food webs.")
I(
    M,
    "literature",
    "06-05",
    0.6,
    "Benadi et al. 2014 study specialisation and phenological synchrony along an altitudinal gradient.",
)
I(
    M,
    "literature",
    "06-05",
    0.6,
    "Hoiss et al. 2015 examine elevation and extreme climatic events in plant–pollinator networks.",
)
I(
    M,
    "literature",
    "06-05",
    0.6,
    "Screen of 61 papers: 23 simulate extinctions, 9 include rewiring, 5 use empirical elevation gradients.",
    key="mira-screen",
)
I(M, "literature", "06-05", 0.4, "Zotero collection Ch1-robustness, tagged sim, rewiring and elev.")
I(M, "literature", "10-22", 0.3, "references.bib had 14 duplicate pairs by DOI; merged keeping the first key.")
I(
    M,
    "literature",
    "06-20",
    0.4,
    "Vázquez, Blüthgen, Cagnolo & Chacoff 2009 review pattern and process in plant–animal mutualistic networks.",
)
I(
    M,
    "literature",
    "11-15",
    0.4,
    "Few studies measure bumblebee CTmax in the field; most use lab ramping protocols at 0.5 °C per minute.",
)
I(M, "people", "06-01", 0.9, "Prof. Katrin Hofer is Mira's PhD supervisor.", ev=True, key="mira-katrin")
I(M, "people", "07-14", 0.5, "Samuel Frei identifies bees and hoverflies, but not other flies, in 2026.")
I(
    M,
    "people",
    "07-14",
    0.2,
    "Samuel Frei can identify all Diptera to genus.",
    archived="10-22 11:00",
    key="mira-old-samuel",
)
I(M, "people", "11-29", 0.6, "Committee: Katrin Hofer, an external member from WSL and Prof. Adler from ETH.")
I(
    M,
    "people",
    "07-05",
    0.55,
    "Elena Petrova insists on glmmTMB for zero-inflated count models and dislikes lme4.",
    key="mira-q7-b",
)
I(
    M,
    "field_work",
    "07-14",
    0.6,
    "Collection permit ANU-2026-0417 from the Amt für Natur und Umwelt Graubünden, valid until 30 September 2026.",
)
I(M, "field_work", "07-14", 0.4, "Field week 20–24 July 2026 with the department Mobility car, pickup at Irchel 05:45.")
I(M, "field_work", "07-14", 0.4, "Datasheet v4 adds a Diptera morphotype column.")
I(
    M,
    "field_work",
    "09-21",
    0.6,
    "Alp Flix lies at about 1,970 metres above sea level and has no mobile signal at the lower hut.",
    key="mira-q6-b",
)
I(
    M,
    "field_work",
    "07-24",
    0.4,
    "Sample the highest bands on the first clear days; afternoon thunderstorms are common from mid-July.",
)
I(M, "field_work", "07-24", 0.3, "Field season 2026 yielded 1,912 observation walks and 6,430 recorded visits.")
I(M, "deadlines", "11-29", 0.9, "Reviewer response for the Ch1 paper is due 15 December 2026.", key="mira-deadline")
I(
    M,
    "deadlines",
    "11-29",
    0.7,
    "Plan: slides draft by 3 Dec, response draft by 6 Dec, lab rehearsal 8 Dec, committee meeting 10 Dec.",
)
I(M, "deadlines", "11-29", 0.5, "OTU table promised for mid-December.")
I(M, "deadlines", "10-01", 0.5, "Annual progress report to the doctoral school is due 31 January 2027.")
I(M, "deadlines", "11-29", 0.8, "Committee meeting on 10 December 2026: 15-minute talk, 12 slides.")
# The lab's group chat as the agent read it: a reply on its own ("Me, on Saturday ...") says little, so each is
# stored with the message it answers as its preceding_text, and is found by questions about that message.
chat(
    M,
    "lab_chat",
    0.5,
    [
        (
            "10-02 16:05",
            'Katrin in the lab chat: "Who collects the pan traps from the upper transects before the first snow?"',
        ),
        (
            "10-02 16:09",
            'Samuel in the lab chat: "Me, on Saturday with the department van. I will drop them at Irchel on Monday."',
        ),
    ],
)
chat(
    M,
    "lab_chat",
    0.5,
    [
        ("11-04 11:20", 'Samuel in the lab chat: "Where should the pinned bee vouchers from this season go?"'),
        ("11-04 11:26", 'Katrin in the lab chat: "Cabinet C in room Y13-J-22, drawers 4 to 6, sorted by transect."'),
    ],
)
chat(
    M,
    "lab_chat",
    0.4,
    [
        ("11-18 09:02", 'Mira in the lab chat: "When is the microscope room free for bee identification?"'),
        (
            "11-18 09:15",
            'Samuel in the lab chat: "Tuesdays and Thursdays after 14:00. Book it in the room calendar first."',
        ),
    ],
)


# ============================================================================================================
# CATEGORY SUMMARIES (markdown)
# ============================================================================================================
CATEGORIES = {
    "ada": {
        "preferences": "**Tooling:** ruff for lint + format (black dropped in June); `mypy --strict` before every "
        "diff.\n**Style:** structlog, small PRs (<300 lines), short PR text with a Testing section.\n"
        "**Safety:** show commands before touching staging or prod.",
        "project_facts": "- paylane-core: Python 3.12, FastAPI, SQLAlchemy 2.0, Postgres 15.\n"
        "- Money: Decimal / minor units, ROUND_HALF_EVEN once at the end.\n"
        "- Checkout SDK: io-ts → zod migration in progress; 40 kB gzip budget (37.9 kB now).\n"
        "- Adyen dedupe on (pspReference, eventCode, success) since Nov.",
        "people": "- Marco Bianchi: test infrastructure reviews.\n- Sofia Lindqvist: engineering manager, "
        "approves migration windows.\n- Hana Kim: dashboard design.",
        "infrastructure": "Staging is read-only through a dedicated role; Codecov uploads off since August.",
        "conventions": "- Migrations: lock_timeout 3s, statement_timeout, CONCURRENTLY for big indexes.\n"
        "- Prod migrations only Tuesday 06:00 UTC.\n- uuid4 idempotency keys in tests.",
        "incidents": "- Jun: partial refund off by one cent (PR #311).\n- Jul: flaky idempotency test.\n"
        "- Oct: staging migration lock timeout.\n- Nov 12: duplicate capture emails (PR #471).\n"
        "- Nov 29: JPY decimals in dashboard (draft PR #498).",
        "constraints": "Never push to main. No PAN/CVV anywhere. Writes on staging need approval. Coverage ≥ 85%. "
        "Safari 14+ for the SDK.",
    },
    "tomas": {
        "preferences": "Rail under ~6 h, aisle for Tomas / window for Lucía, cabin bags only, boutique hotels, "
        "slow travel from one base. **New (Nov):** no day trips where transit > time on site.",
        "people": "- Lucía: partner, no seafood.\n- Parents in Brno, 70s, father uses a cane.\n"
        "- Tomas speaks Czech, German, English, some Spanish.",
        "travel_plans": "- ✅ Alta Via 1 (Sep), Portugal (Oct), Japan (Nov).\n- 🔜 Vienna markets 18–21 Dec.\n"
        "- 💡 Warm spring trip in March 2027.",
        "bookings": "Vienna: Hotel Altstadt (2 rooms), RJX 61/66 trains, Gasthaus Pöschl on 19 Dec. "
        "Past trips' bookings kept for reference.",
        "budget": "Japan €6,222 of €6,500 cap (+€342 vs plan). Vienna: €1,482.60 of €2,000 committed.",
        "constraints": "No Wednesday-morning returns; step-free routes with parents; hut liners required.",
        "documents": "Czech passport to 2031, BahnCard 25 to Mar 2027, ERGO annual insurance. EU261 claim paid 9 Nov.",
        "recommendations": "Ryokan Motonago (Kyoto), Gasthaus Pöschl (Vienna), Prado (Lisbon). Himeji only en "
        "route to Hiroshima.",
    },
    "mira": {
        "preferences": "Post-2015 papers (plus classics), peer-reviewed first, author-year + DOI. Quarto + Zotero "
        "+ Better BibTeX. R/tidyverse.",
        "thesis": "**Plant–pollinator networks along elevation gradients in the Swiss Alps.**\n"
        "- Ch1 robustness paper: major revision.\n- Ch2 visitation: drafting, target Oikos.\n"
        "- Ch3 microbes & floral traits: waiting for data.\n- Ch4 heat tolerance experiment: 2027.",
        "methods": "Transect protocol v3; glmmTMB nbinom2 with zero inflation (DHARMa-checked); robustness via "
        "bipartite::second.extinct and R50; sensitivity over three extinction orders.",
        "literature": "Classics: Memmott 2004, Dunne 2002, Burgos 2007, Kaiser-Bunbury 2010. Elevation: Benadi "
        "2014, Hoiss 2015. Screen: 61 papers → 23 sim → 9 rewiring → 5 elevation.",
        "people": "Supervisor Katrin Hofer; Samuel Frei (bee and hoverfly IDs); committee with WSL and ETH members.",
        "field_work": "2026 season done (permit ANU-2026-0417). 1,912 walks, 6,430 visits.",
        "deadlines": "3 Dec slides → 6 Dec response draft → 8 Dec rehearsal → 10 Dec committee → 15 Dec "
        "reviewer response. Progress report 31 Jan 2027.",
        "lab_chat": "The lab's group chat, one memory per message; a reply keeps the message it answers as its "
        "preceding text. Samuel collects the pan traps, vouchers go to cabinet C, the microscope room "
        "is free Tue/Thu afternoons.",
    },
}


# ============================================================================================================
# EPISODES. E(user, id, session_id|None, start, outcome, importance, steps, summary|None, skill=skill_id)
# steps: (observation, action, result); timestamps are start + 4 min per step.
# ============================================================================================================
EPISODES: list[dict] = []


def E(user, eid, sid, start, outcome, importance, steps, summary=None, skill=None, skill_ok=None):
    EPISODES.append(
        dict(
            user=user,
            id=eid,
            session_id=sid,
            start=start,
            outcome=outcome,
            importance=importance,
            steps=steps,
            summary=summary,
            skill=skill,
            skill_ok=skill_ok,
        )
    )


E(
    A,
    "ep-ada-01",
    "ada-s01",
    "06-10 09:20",
    "success",
    0.6,
    [
        (
            "test_partial_refund_rounding fails: 10.01 != 10.00",
            "Read partial_refund_total",
            "Line items rounded before summing",
        ),
        (
            "Rounding happens per line",
            "Sum raw Decimals, quantize once with ROUND_HALF_EVEN",
            "12/12 refund tests pass, mypy clean",
        ),
        ("Fix verified", "Open PR #311 with Summary/Testing template", "PR opened on fix/partial-refund-rounding"),
    ],
    "Fixed a one-cent partial-refund error by rounding once at the end with banker's rounding; PR #311.",
    skill="sk-ada-prdesc-v1",
)
E(
    A,
    "ep-ada-02",
    "ada-s02",
    "07-22 14:15",
    "success",
    0.6,
    [
        (
            "test_idempotent_capture fails only on CI",
            "Fetch CI log for run 88412",
            "UniqueViolation on idempotency_keys_pkey on worker gw2",
        ),
        ("Fixture uses constant key 'test-key-1'", "Generate key with uuid4 per test", "Patch to tests/conftest.py"),
        ("Need confidence the flake is gone", "Run payments suite 20x on 4 workers", "480 passed"),
        ("Stable", "Open PR #356, request Marco's review", "PR opened"),
    ],
    "Flaky idempotency test traced to xdist workers sharing a hard-coded key; fixed with uuid4 keys.",
    skill="sk-ada-flaky-v1",
)
E(
    A,
    "ep-ada-03",
    "ada-s03",
    "09-03 10:05",
    "recovered",
    0.55,
    [
        ("4 files import io-ts", "Rewrite paymentMethod.ts with z.discriminatedUnion", "38+/52- lines"),
        ("tsc TS2322 at client.ts:88", "Replace .optional() with .default()", "tsc 0 errors, 64 vitest tests pass"),
        ("Bundle budget 40 kB", "Run size check", "37.9 kB gzipped"),
    ],
    "Migrated paymentMethod.ts from io-ts to zod; recovered from an optional-vs-default type error.",
    skill="sk-ada-zod-v1",
)
E(
    A,
    "ep-ada-04",
    "ada-s04",
    "10-15 16:30",
    "recovered",
    0.7,
    [
        (
            "Need settled_at on 90M-row payouts",
            "Write migration with lock_timeout 3s and CONCURRENTLY index",
            "31-line migration",
        ),
        ("Upgrade on staging-eu", "alembic upgrade head", "Canceled: lock timeout"),
        ("Lock held", "Inspect pg_stat_activity", "payout_batcher transaction open 7 min"),
        ("Batcher blocks DDL", "Pause payouts.batcher.enabled and retry", "Applied; index built in 212 s"),
        ("Flag still off", "Re-enable payouts.batcher.enabled", "Batcher running again"),
    ],
    "Staging migration hit the lock timeout behind payout_batcher; paused the batcher via its flag and retried.",
    skill="sk-ada-migration-v2",
)
E(
    A,
    "ep-ada-05",
    "ada-s05",
    "11-12 08:45",
    "recovered",
    0.9,
    [
        ("Merchants got duplicate capture emails", "Group webhook logs by psp_reference", "37 duplicates 2 s apart"),
        (
            "Dedupe keyed on internal event id",
            "Dedupe on (pspReference, eventCode, success)",
            "Replay test still sends 2 emails",
        ),
        ("Outbox written before dedupe commit", "Write outbox in the same transaction", "23 webhook tests pass"),
        ("Fix merged", "Write incident note", "Posted to #payments-incidents"),
    ],
    "Duplicate Adyen notifications produced double emails; fixed the dedupe key and outbox transaction (PR #471).",
    skill="sk-ada-replay-v1",
)
E(
    A,
    "ep-ada-06",
    "ada-s06",
    "11-29 10:20",
    "partial",
    0.6,
    [
        ("JPY shows ¥1200.0", "grep toFixed in dashboard", "money.ts uses toFixed(1) for all currencies"),
        ("Need per-currency exponent", "Use Intl.NumberFormat resolvedOptions", "JPY fixed, KWD test fails"),
        ("compact.ts forces 2 decimals", "Remove the override", "13/13 tests pass"),
        ("CSV export and KWD display unresolved", "Open draft PR #498 with a to-do list", "Draft PR open"),
    ],
)
E(
    A,
    "ep-ada-07",
    None,
    "08-05 11:00",
    "failure",
    0.5,
    [
        (
            "Want per-worker test databases",
            "Create DB per PYTEST_XDIST_WORKER in conftest",
            "Alembic runs 4x in parallel",
        ),
        ("Parallel migrations deadlock on alembic_version", "Serialize with a file lock", "CI time +6 min"),
        ("Too slow and Marco owns the design", "Revert the change", "Back to shared DB with uuid4 keys"),
    ],
    "Tried per-worker test databases; parallel migrations deadlocked and CI slowed by 6 minutes, so it was reverted.",
)
E(
    A,
    "ep-ada-08",
    None,
    "08-19 15:30",
    "success",
    0.3,
    [
        (
            "Codecov upload step times out in 1 of 5 runs",
            "Check CI minutes and upload logs",
            "Uploads add 2–4 min and retry",
        ),
        ("pytest-cov already enforces 85%", "Disable the Codecov upload step", "CI 3 min faster, no flakes"),
    ],
    "Disabled flaky Codecov uploads; coverage floor stays enforced by pytest-cov.",
)
E(
    A,
    "ep-ada-09",
    None,
    "09-17 13:40",
    "failure",
    0.6,
    [
        ("Migrate threeDS.ts to zod", "Rewrite schema with z.object and refinements", "Types OK, tests pass"),
        ("Check bundle size", "pnpm -F checkout-sdk size", "41.2 kB gzipped, over the 40 kB limit"),
        ("Over budget", "Revert and open an issue to evaluate zod/mini", "Back to 37.9 kB"),
    ],
    skill="sk-ada-zod-v1",
)
E(
    A,
    "ep-ada-10",
    None,
    "10-02 10:10",
    "success",
    0.4,
    [
        (
            "mypy --strict flags Mapped[Optional[Decimal]] on Payout.fee",
            "Read SQLAlchemy 2.0 typing docs",
            "Use Mapped[Decimal | None] with mapped_column(Numeric(18, 4))",
        ),
        ("Type fixed", "Run mypy and tests", "No issues in 145 files; tests pass"),
    ],
    "Fixed a SQLAlchemy 2.0 typing error under mypy --strict.",
)
E(
    A,
    "ep-ada-11",
    None,
    "10-27 06:00",
    "success",
    0.7,
    [
        ("Tuesday 06:00 UTC window open", "Pause payout_batcher on prod-eu", "Flag off"),
        ("Lock timeout set to 3s", "alembic -x env=prod-eu upgrade head", "Column added; index built in 9 min"),
        ("Migration done", "Re-enable the batcher and watch error rates", "No errors for 30 min"),
    ],
    "Applied the settled_at migration in production during the Tuesday window without incident.",
    skill="sk-ada-migration-v2",
)
E(
    A,
    "ep-ada-12",
    None,
    "11-20 16:00",
    "failure",
    0.5,
    [
        ("test_refund_webhook_order flaky", "Apply flaky-test triage prompt v2", "Concluded: xdist key collision"),
        ("uuid4 keys already used there", "Rerun with -p no:randomly", "Still flaky; real cause is event ordering"),
    ],
    "Triage prompt v2 guessed a key collision; the real cause was webhook event ordering. Needs a better prompt.",
    skill="sk-ada-flaky-v2",
)

E(
    T,
    "ep-tomas-01",
    "tomas-s01",
    "06-18 19:45",
    "success",
    0.5,
    [
        ("Open-jaw MUC→LIS / OPO→MUC wanted", "Compare direct flights", "LH 07:05 to LIS €190, TAP OPO→MUC €140"),
        ("Fares acceptable", "Hold fares and book Memmo Alfama", "Held; hotel booked 2–4 Oct"),
        ("Porto cellar visit", "Book Graham's Monday 11:00", "Booked, €30 pp"),
    ],
    "Planned the Portugal long weekend: open-jaw flights held, Memmo Alfama and Graham's tasting booked.",
    skill="sk-tomas-flights-v1",
)
E(
    T,
    "ep-tomas-02",
    "tomas-s02",
    "07-30 20:30",
    "partial",
    0.5,
    [
        ("Four huts needed 12–15 Sep", "Email booking requests", "Fanes and Averau confirmed"),
        ("Biella and Lagazuoi silent", "Wait 48 h", "Still pending at end of session"),
    ],
    "Hut requests sent; only two of four confirmed in the session.",
)
E(
    T,
    "ep-tomas-03",
    None,
    "08-06 09:00",
    "success",
    0.4,
    [
        ("Biella and Lagazuoi unconfirmed", "Send follow-up emails in Italian and German", "Both confirmed by evening"),
        ("All huts booked", "Draft packing list", "List sent"),
    ],
    "Followed up with the two remaining huts; all four confirmed and packing list sent.",
    skill="sk-tomas-packing-v1",
)
E(
    T,
    "ep-tomas-04",
    "tomas-s03",
    "08-25 21:20",
    "success",
    0.6,
    [
        ("Japan 2–14 Nov, Kyoto base", "Compare MUC→Japan options", "LH714 to HND + Finnair from KIX €1,080 pp"),
        ("Within budget", "Book with aisle/window", "Booked, €2,160 total"),
    ],
    "Booked open-jaw flights to Japan within budget.",
    skill="sk-tomas-flights-v2",
)
E(
    T,
    "ep-tomas-05",
    None,
    "08-28 10:00",
    "success",
    0.4,
    [
        ("Kaiseki dashi contains bonito", "Ask ryokan for vegetarian kaiseki", "Ryokan agreed, shojin-style menu"),
        ("Confirmed", "Book 2 nights", "Booked, about €420/night"),
    ],
    "Arranged vegetarian kaiseki for Lucía at the ryokan.",
)
E(
    T,
    "ep-tomas-06",
    "tomas-s04",
    "09-28 07:20",
    "recovered",
    0.7,
    [
        ("TAP OPO→MUC on 6 Oct cancelled", "List EU261 rights and rerouting", "TAP via LIS, TAP next day, LH via FRA"),
        ("Wednesday meeting", "Request LH1177 + LH106 reroute", "Confirmed, seats 23C/23A and 12C/12A"),
        ("Compensation due", "File EU261 claim", "TP-CLM-5521783 for €800"),
    ],
    "Rerouted the cancelled TAP flight via Frankfurt the same day and filed an €800 EU261 claim.",
    skill="sk-tomas-rebook-v1",
)
E(
    T,
    "ep-tomas-07",
    None,
    "10-01 18:00",
    "recovered",
    0.4,
    [
        (
            "Online check-in for LH to Lisbon fails",
            "Compare booking name with passport",
            "Booking lacks Lucía's second surname",
        ),
        ("Name mismatch", "Call Lufthansa to correct the name", "Corrected; boarding passes issued"),
    ],
)
E(
    T,
    "ep-tomas-08",
    None,
    "11-06 07:30",
    "failure",
    0.5,
    [
        ("Day trip to Himeji planned", "Follow itinerary v2 day plan", "3 h total on trains"),
        ("Only 2 h at the castle", "Skip the Koko-en garden", "Tired, late dinner"),
    ],
    "Himeji day trip spent more time on trains than at the castle.",
    skill="sk-tomas-itinerary-v2",
)
E(
    T,
    "ep-tomas-09",
    "tomas-s06",
    "11-18 20:35",
    "success",
    0.5,
    [
        ("Card exports for Japan", "Categorise and sum expenses", "€6,222 total"),
        ("Plan was €5,880", "Compare against plan and cap", "+€342 vs plan, under €6,500 cap"),
    ],
    skill="sk-tomas-budget-v1",
)
E(
    T,
    "ep-tomas-10",
    "tomas-s05",
    "11-28 18:50",
    "success",
    0.6,
    [
        (
            "Four people, two rooms, <€200/room",
            "Compare Vienna hotels near Spittelberg",
            "Altstadt, Motel One, 25hours",
        ),
        ("Parents need step-free access", "Book Hotel Altstadt Vienna", "2 rooms, €1,323, free cancellation to 11 Dec"),
        ("Trains needed", "Book ÖBB Sparschiene RJX 61/66", "€159.60"),
    ],
    "Booked hotel and trains for the Vienna Christmas markets.",
    skill="sk-tomas-itinerary-v3",
)
E(
    T,
    "ep-tomas-11",
    "tomas-s05",
    "11-28 19:10",
    "recovered",
    0.4,
    [
        ("Dinner for 4 on 19 Dec", "Try Plachutta", "Fully booked"),
        ("Need Austrian food, no seafood focus", "Reserve Gasthaus Pöschl", "Table for 4 at 19:00"),
    ],
)
E(
    T,
    "ep-tomas-12",
    None,
    "11-25 12:00",
    "partial",
    0.3,
    [
        (
            "Spring trip options include Madeira and Sicily",
            "Check entry and document rules",
            "Both EU: ID cards suffice",
        ),
        ("Lucía's passport expiry unknown", "Ask Tomas", "No answer yet"),
    ],
    "Started checking documents for spring trip options; one detail still open.",
)

E(
    M,
    "ep-mira-01",
    "mira-s01",
    "06-05 13:20",
    "success",
    0.6,
    [
        ("Need robustness + elevation literature", "Build WoS query", "143 records"),
        ("Filter reviews and non-English", "Apply filters", "61 records"),
        ("Export", "Send to Zotero Ch1-robustness", "61 items with authorYear keys"),
    ],
    "Web of Science search for robustness and elevation papers: 143 hits, 61 kept and exported to Zotero.",
    skill="sk-mira-litsearch-v1",
)
E(
    M,
    "ep-mira-02",
    None,
    "06-20 10:00",
    "success",
    0.5,
    [
        ("61 abstracts to screen", "Tag sim / rewiring / elev", "23 sim, 9 rewiring, 5 elev"),
        ("5 elevation papers", "Summarise with template v2", "5 one-paragraph summaries"),
    ],
    "Screened 61 abstracts and summarised the 5 elevation papers.",
    skill="sk-mira-summary-v2",
)
E(
    M,
    "ep-mira-03",
    "mira-s02",
    "07-14 07:45",
    "success",
    0.4,
    [
        ("Samuel only IDs bees and hoverflies", "Add Diptera morphotype column", "Datasheet v4"),
        ("Field week 20–24 July", "Print 40 copies on BIO-3F", "Printed"),
    ],
    "Updated the field datasheet to v4 and printed it.",
    skill="sk-mira-datasheet-v1",
)
E(
    M,
    "ep-mira-04",
    None,
    "07-22 12:40",
    "failure",
    0.5,
    [
        ("Cumulus building at 2,300 m", "Continue transects at the top band", "Thunder at 12:55"),
        ("Lightning risk", "Abort and descend", "2 of 3 transects lost for the day"),
    ],
    "Thunderstorm forced an abort at the top band; two transects had to be repeated on Friday.",
)
E(
    M,
    "ep-mira-05",
    "mira-s03",
    "09-10 15:10",
    "recovered",
    0.7,
    [
        ("Poisson GLMM fits badly", "Run DHARMa dispersion and zero-inflation tests", "Both significant"),
        ("Overdispersed and zero-inflated", "Fit glmmTMB nbinom2 with ziformula", "Non-positive-definite Hessian"),
        ("(1|date) near-zero variance", "Drop (1|date)", "Converged; AIC 2,314 vs 2,389"),
        ("Check fit", "Rerun DHARMa", "Residuals OK"),
    ],
    "Moved the visitation model from Poisson to zero-inflated negative binomial; fixed a Hessian warning.",
    skill="sk-mira-glmm-v1",
)
E(
    M,
    "ep-mira-06",
    None,
    "09-24 14:00",
    "failure",
    0.4,
    [
        ("Need elevation effect figure", "ggpredict without specifying the offset", "Predictions 10x too high"),
        ("Offset defaulted to log(1)", "Not noticed until Katrin asked", "Figure withdrawn from lab meeting"),
    ],
    "Marginal-effect plot was wrong because the offset was not set when predicting.",
    skill="sk-mira-glmm-v1",
)
E(
    M,
    "ep-mira-07",
    "mira-s04",
    "10-22 10:40",
    "success",
    0.3,
    [
        ("Quarto warns on duplicate keys", "Group references.bib by DOI", "14 duplicate pairs"),
        ("Keep older keys", "Merge and rewrite 6 citations", "Clean render"),
    ],
    skill="sk-mira-bib-v1",
)
E(
    M,
    "ep-mira-08",
    None,
    "10-30 09:15",
    "recovered",
    0.3,
    [
        ("Quarto render fails: csl not found", "Check _quarto.yml paths", "csl path relative to chapter folder"),
        ("Wrong path", "Move oikos.csl to project root", "Render succeeds"),
    ],
)
E(
    M,
    "ep-mira-09",
    None,
    "11-05 11:00",
    "success",
    0.5,
    [
        ("12 new papers for the Ch2 discussion", "Summarise with template v3", "12 summaries"),
        ("Two papers contradict H2", "Flag them for Katrin", "Noted in discussion outline"),
    ],
    "Summarised 12 papers for the Ch2 discussion; two contradict H2.",
    skill="sk-mira-summary-v3",
)
E(
    M,
    "ep-mira-10",
    None,
    "11-15 15:30",
    "partial",
    0.4,
    [
        ("Ch4 needs field CTmax literature", "Search with lit-search query v2", "Only 7 relevant hits"),
        ("Too few", "Broaden to lab studies", "31 hits, mostly lab ramping"),
    ],
    "Literature on field CTmax in bumblebees is thin; broadened to lab studies.",
    skill="sk-mira-litsearch-v2",
)
E(
    M,
    "ep-mira-11",
    "mira-s05",
    "11-29 09:10",
    "success",
    0.6,
    [
        ("15-minute committee talk", "Draft 12-slide outline", "Outline accepted"),
        ("WSL member likely asks about climate", "Add backup slide on temperature resolution", "Added"),
    ],
)
E(
    M,
    "ep-mira-12",
    "mira-s05",
    "11-29 09:40",
    "partial",
    0.6,
    [
        ("Reviewer 2 wants sensitivity to extinction order", "Plan three orders × 1,000 iterations", "Plan written"),
        ("Response letter needed", "Start draft from template", "R2.3 drafted, others open"),
    ],
    "Started the reviewer response; sensitivity analysis planned but not yet run.",
    skill="sk-mira-response-v1",
    skill_ok=True,
)


# ============================================================================================================
# SKILLS. S(user, id, name, version, kind, date, description, body, successes, failures)
# successes/failures are total outcome records for that skill version (episode-linked ones included).
# ============================================================================================================
SKILLS: list[dict] = []


def S(user, sid, name, version, kind, date, description, body, s, f):
    SKILLS.append(
        dict(
            user=user,
            id=sid,
            name=name,
            version=version,
            kind=kind,
            date=date,
            description=description,
            body=body,
            s=s,
            f=f,
        )
    )


S(
    A,
    "sk-ada-prdesc-v1",
    "pr-description",
    1,
    "template",
    "06-10 08:00",
    "Pull request description for paylane repos.",
    "## Summary\n{summary}\n\n## Changes\n{changes}\n\n## Testing\n{testing}\n",
    5,
    3,
)
S(
    A,
    "sk-ada-prdesc-v2",
    "pr-description",
    2,
    "template",
    "07-01 09:00",
    "Shorter PR description: two-line summary plus testing; links the ticket.",
    "## Summary\n{summary_2_lines}\n\nRefs: {ticket}\n\n## Testing\n- [ ] mypy --strict\n- [ ] {test_command}\n",
    40,
    10,
)
S(
    A,
    "sk-ada-prdesc-v3",
    "pr-description",
    3,
    "template",
    "11-01 09:00",
    "v2 plus a rollout/risk line for migrations and flags.",
    "## Summary\n{summary_2_lines}\n\nRefs: {ticket}\n\n## Testing\n- [ ] mypy --strict\n- [ ] {test_command}\n\n"
    "## Rollout\n{flags_or_migrations_or_none}\n",
    3,
    0,
)
S(
    A,
    "sk-ada-flaky-v1",
    "triage-flaky-test",
    1,
    "prompt",
    "07-22 14:00",
    "Triage a test that fails on CI but passes locally.",
    "You are triaging a flaky pytest test.\n1. Fetch the failing CI log and note the xdist worker.\n"
    "2. List shared state: DB rows, constant keys, time, randomness, ordering.\n"
    "3. Reproduce with `pytest -n 4 --count 20 {test}`.\n4. Propose the smallest fix and show the diff.",
    5,
    3,
)
S(
    A,
    "sk-ada-flaky-v2",
    "triage-flaky-test",
    2,
    "prompt",
    "11-01 10:00",
    "v1 with an explicit checklist of xdist pitfalls (over-fits to key collisions).",
    "Triage the flaky test {test}.\nFirst check for xdist collisions: constant ids, idempotency keys, shared "
    "tables. If found, replace with uuid4.\nOtherwise rerun with -p no:randomly and report.",
    2,
    7,
)
S(
    A,
    "sk-ada-migration-v1",
    "write-alembic-migration",
    1,
    "template",
    "06-20 10:00",
    "Alembic migration skeleton.",
    "def upgrade() -> None:\n    op.add_column({table!r}, sa.Column({column!r}, {type}, nullable=True))\n\n"
    "def downgrade() -> None:\n    op.drop_column({table!r}, {column!r})\n",
    6,
    2,
)
S(
    A,
    "sk-ada-migration-v2",
    "write-alembic-migration",
    2,
    "template",
    "10-15 16:25",
    "Migration with lock_timeout, statement_timeout and concurrent index creation.",
    "def upgrade() -> None:\n    op.execute(\"SET lock_timeout = '3s'\")\n    op.execute(\"SET statement_timeout = '15min'\")\n"
    "    op.add_column({table!r}, sa.Column({column!r}, {type}, nullable=True))\n"
    "    with op.get_context().autocommit_block():\n"
    "        op.create_index({index!r}, {table!r}, [{column!r}], postgresql_concurrently=True)\n",
    9,
    1,
)
S(
    A,
    "sk-ada-idem-v1",
    "idempotency-key-check",
    1,
    "code",
    "07-25 11:00",
    "Assert an endpoint is idempotent by replaying the same request with one key.",
    "def assert_idempotent(client, path, body):\n    key = str(uuid.uuid4())\n"
    "    r1 = client.post(path, json=body, headers={'Idempotency-Key': key})\n"
    "    r2 = client.post(path, json=body, headers={'Idempotency-Key': key})\n"
    "    assert r1.status_code == r2.status_code\n    assert r1.json() == r2.json()\n",
    7,
    0,
)
S(
    A,
    "sk-ada-replay-v1",
    "webhook-replay",
    1,
    "code",
    "11-12 08:50",
    "Replay a stored provider notification twice and count side effects.",
    "def replay(notification: dict, times: int = 2) -> int:\n    for _ in range(times):\n"
    "        handle_adyen_notification(notification)\n    return outbox.count(kind='capture_email')\n",
    3,
    0,
)
S(
    A,
    "sk-ada-replay-v2",
    "webhook-replay",
    2,
    "code",
    "11-28 15:00",
    "v1 plus shuffled delivery order to catch ordering bugs.",
    "def replay(notifications: list[dict], times: int = 2, seed: int = 0) -> int:\n"
    "    batch = notifications * times\n    random.Random(seed).shuffle(batch)\n"
    "    for n in batch:\n        handle_adyen_notification(n)\n    return outbox.count(kind='capture_email')\n",
    0,
    0,
)
S(
    A,
    "sk-ada-zod-v1",
    "zod-schema-from-io-ts",
    1,
    "code",
    "09-03 10:00",
    "Translate an io-ts codec into a zod schema with the same exported type name.",
    "export const {Name}Schema = z.object({ /* fields */ });\nexport type {Name} = z.infer<typeof {Name}Schema>;\n"
    "// io-ts t.union -> z.discriminatedUnion('type', [...]); optional+default -> .default()\n",
    4,
    2,
)
S(
    A,
    "sk-ada-zod-v2",
    "zod-schema-from-io-ts",
    2,
    "code",
    "09-20 09:00",
    "v1 plus a bundle-size check after each file.",
    "export const {Name}Schema = z.object({ /* fields */ });\nexport type {Name} = z.infer<typeof {Name}Schema>;\n"
    "// after each file: pnpm -F checkout-sdk size  (must stay < 40 kB gzip)\n",
    5,
    0,
)

S(
    T,
    "sk-tomas-flights-v1",
    "compare-flights",
    1,
    "prompt",
    "06-18 19:00",
    "Compare flight options for a route and dates.",
    "List direct flights for {origin}→{destination} on {date}: airline, times, fare with cabin bag. Sort by price.",
    6,
    3,
)
S(
    T,
    "sk-tomas-flights-v2",
    "compare-flights",
    2,
    "prompt",
    "08-20 09:00",
    "Compare flights and rail, apply Tomas's preferences.",
    "For {origin}→{destination} on {date}: if rail is under 6 h, show rail first. Otherwise list flights with "
    "times, stops and fare incl. cabin bag. Seats: aisle for Tomas, window for Lucía. Prefer morning "
    "departures arriving by lunch.",
    14,
    1,
)
S(
    T,
    "sk-tomas-itinerary-v1",
    "daily-itinerary",
    1,
    "template",
    "06-25 10:00",
    "Day-by-day itinerary.",
    "### Day {n} – {date}\n- Morning: {morning}\n- Afternoon: {afternoon}\n- Evening: {dinner}\n",
    4,
    2,
)
S(
    T,
    "sk-tomas-itinerary-v2",
    "daily-itinerary",
    2,
    "template",
    "08-30 10:00",
    "Itinerary with transit times and meal notes (no seafood for Lucía).",
    "### Day {n} – {date} ({base})\n- {morning} ({transit_morning})\n- {afternoon} ({transit_afternoon})\n"
    "- Dinner: {restaurant} — no seafood\n",
    10,
    4,
)
S(
    T,
    "sk-tomas-itinerary-v3",
    "daily-itinerary",
    3,
    "template",
    "11-20 09:00",
    "v2 with a transit-vs-time-on-site check and accessibility notes.",
    "### Day {n} – {date} ({base})\n- {plan}\n- Transit {transit_h} h vs on site {onsite_h} h"
    " → {ok_if_transit_below_onsite}\n- Step-free: {step_free}\n- Dinner: {restaurant} — no seafood\n",
    2,
    0,
)
S(
    T,
    "sk-tomas-rebook-v1",
    "rebook-cancelled-flight",
    1,
    "prompt",
    "09-28 07:00",
    "Handle a cancelled flight under EU261.",
    "A flight {flight} on {date} was cancelled with {notice_days} days notice. 1) State EU261 rights (reroute or "
    "refund; compensation band by distance). 2) List reroutes incl. alliance partners, respecting {constraints}. "
    "3) Draft the claim.",
    3,
    0,
)
S(
    T,
    "sk-tomas-packing-v1",
    "packing-list",
    1,
    "template",
    "07-30 21:00",
    "Packing list for hut-to-hut trekking.",
    "- Hut sleeping-bag liner\n- Headlamp\n- Warm layer, rain shell, gloves\n- Map {map_sheet}\n"
    "- Cash: €{cash_per_day} × {days}\n",
    5,
    1,
)
S(
    T,
    "sk-tomas-packing-v2",
    "packing-list",
    2,
    "template",
    "09-01 09:00",
    "Packing list by trip type (trek, city, winter) with cabin-bag limits.",
    "Trip type: {type}. Cabin bag only (8 kg).\nAlways: passport/ID, BahnCard, chargers, insurance card.\n"
    "{type_specific_items}\n",
    6,
    0,
)
S(
    T,
    "sk-tomas-budget-v1",
    "budget-tracker",
    1,
    "code",
    "08-25 22:00",
    "Sum expenses by category and compare with plan and cap.",
    "def tally(expenses, plan, cap):\n    by_cat = defaultdict(float)\n    for e in expenses:\n"
    "        by_cat[e['category']] += e['eur']\n    total = sum(by_cat.values())\n"
    "    return {'by_category': dict(by_cat), 'total': total, 'vs_plan': total - plan, 'under_cap': total <= cap}\n",
    9,
    1,
)
S(
    T,
    "sk-tomas-visa-v1",
    "visa-check",
    1,
    "prompt",
    "11-25 11:00",
    "Check entry requirements for each traveller's passport.",
    "For each traveller ({passports}) and destination {country}: visa needed? max stay? passport validity "
    "required beyond return date? Cite the official government page.",
    0,
    0,
)

S(
    M,
    "sk-mira-litsearch-v1",
    "lit-search-query",
    1,
    "prompt",
    "06-05 12:50",
    "Build a Web of Science query from a topic.",
    "Turn the topic '{topic}' into a Web of Science TS= query with truncation (*) and synonyms. Years {from}-{to}.",
    7,
    5,
)
S(
    M,
    "sk-mira-litsearch-v2",
    "lit-search-query",
    2,
    "prompt",
    "09-01 09:00",
    "v1 plus exclusion filters and Mira's preferences.",
    "Turn '{topic}' into a WoS TS= query with truncation and synonyms; years 2015–2026 unless classics are "
    "requested; exclude reviews, conference abstracts, preprints and non-English; report counts before and "
    "after filtering.",
    8,
    2,
)
S(
    M,
    "sk-mira-summary-v1",
    "summarize-paper",
    1,
    "template",
    "06-05 12:00",
    "One-paragraph paper summary.",
    "{authors} ({year}). {title}. {journal}. DOI: {doi}\nSummary: {summary}\n",
    3,
    3,
)
S(
    M,
    "sk-mira-summary-v2",
    "summarize-paper",
    2,
    "template",
    "06-20 09:00",
    "Structured summary with relevance to a chapter.",
    "{authors} ({year}) — DOI {doi}\n- Question: {question}\n- System: {system}\n- Methods: {methods}\n"
    "- Key result: {result}\n- Relevance to {chapter}: {relevance}\n",
    14,
    4,
)
S(
    M,
    "sk-mira-summary-v3",
    "summarize-paper",
    3,
    "template",
    "09-15 09:00",
    "v2 plus limitations and whether it supports or contradicts each hypothesis.",
    "{authors} ({year}) — DOI {doi}\n- Question: {question}\n- System: {system}\n- Methods: {methods}\n"
    "- Key result: {result}\n- Limitations: {limitations}\n- H1/H2/H3: {supports_contradicts}\n"
    "- Relevance to {chapter}: {relevance}\n",
    95,
    5,
)
S(
    M,
    "sk-mira-glmm-v1",
    "glmm-diagnostics",
    1,
    "code",
    "09-10 15:05",
    "DHARMa checks for a fitted GLMM.",
    "library(DHARMa)\nres <- simulateResiduals(fit, n = 1000)\nplot(res)\ntestDispersion(res)\n"
    "testZeroInflation(res)\n",
    2,
    1,
)
S(
    M,
    "sk-mira-glmm-v2",
    "glmm-diagnostics",
    2,
    "code",
    "09-25 10:00",
    "v1 plus convergence checks and offset-aware predictions.",
    "library(DHARMa); library(ggeffects)\nres <- simulateResiduals(fit, n = 1000)\ntestDispersion(res)\n"
    "testZeroInflation(res)\nstopifnot(fit$sdr$pdHess)\n"
    "pred <- ggpredict(fit, terms = 'elevation_s', condition = c(minutes = 15))\n",
    6,
    1,
)
S(
    M,
    "sk-mira-bib-v1",
    "zotero-bibtex-clean",
    1,
    "code",
    "10-22 10:30",
    "Find duplicate BibTeX entries by DOI and propose merges keeping the oldest key.",
    "import bibtexparser\ndb = bibtexparser.parse_file('references.bib')\nby_doi = {}\n"
    "for e in db.entries:\n    doi = e.fields_dict.get('doi')\n    if doi:\n"
    "        by_doi.setdefault(doi.value.lower(), []).append(e.key)\n"
    "dupes = {d: keys for d, keys in by_doi.items() if len(keys) > 1}\n",
    3,
    0,
)
S(
    M,
    "sk-mira-datasheet-v1",
    "field-datasheet",
    1,
    "template",
    "07-14 07:40",
    "Transect observation datasheet.",
    "Site | Band | Transect | Date | Start | End | Temp °C | Wind (Bft) | Cloud %\n"
    "Time | Plant species | Visitor (bee/hoverfly ID or morphotype) | Diptera morphotype | Netted? | Notes\n",
    4,
    0,
)
S(
    M,
    "sk-mira-response-v1",
    "reviewer-response",
    1,
    "template",
    "11-29 09:30",
    "Point-by-point response to reviewers.",
    "**{reviewer}.{n}** > {comment}\n\n**Response:** {response}\n\n**Changes:** {changes} (lines {lines})\n",
    1,
    0,
)


# ============================================================================================================
# FEEDBACK, WORKING MEMORY, FORGET LOG
# ============================================================================================================
FEEDBACK = [  # (user, item key, label, note, at)
    (A, "ada-money", "useful", "Caught a rounding mistake in the refunds diff before review.", "07-01 10:00"),
    (A, "ada-locktimeout", "useful", "Migration would have blocked prod writes without it.", "10-27 06:30"),
    (A, "ada-window", "useful", "Reminded me not to run the prod migration on a Monday.", "10-26 17:00"),
    (
        A,
        "ada-ttl",
        "harmful",
        "Misapplied: the agent assumed 24h TTL for Stripe keys too (Stripe uses its own).",
        "08-14 11:20",
    ),
    (A, "ada-dedupe", "useful", "Right key for the second Adyen account as well.", "11-20 09:00"),
    (A, "ada-bundle", "useful", "Stopped the threeDS.ts migration from shipping over budget.", "09-17 14:00"),
    (T, "tom-seats", "useful", "Seat picks were right on all four flights.", "09-28 08:00"),
    (T, "tom-lucia", "useful", "Restaurant shortlist had no seafood places.", "11-28 19:30"),
    (T, "tom-cash", "harmful", "Two huts accepted cards this year; we carried far too much cash.", "09-17 20:00"),
    (T, "tom-daytrip", "useful", "Used when planning the spring options.", "11-25 12:10"),
    (T, "tom-japan-budget", "useful", "", "11-20 09:00"),
    (
        M,
        "mira-post2015",
        "harmful",
        "Excluded Memmott 2004 from the first search draft although it is a classic.",
        "06-06 09:00",
    ),
    (M, "mira-model", "useful", "Copied straight into the methods section.", "10-22 10:20"),
    (M, "mira-gap", "useful", "Katrin liked the quantified gap.", "10-29 16:00"),
    (M, "mira-deadline", "useful", "", "11-29 12:00"),
    (M, "mira-template", "useful", "Summaries are now consistent across chapters.", "11-05 12:00"),
]

WORKING = {  # session_id -> {slot: value}
    "ada-s05": {
        "current_task": "Fix duplicate capture emails from Adyen retries",
        "last_observation": "23 passed in 2.10s (tests/webhooks)",
        "scratchpad": "dedupe key = (pspReference, eventCode, success); outbox insert must share the txn",
        "incident_ref": "INC-2026-1112",
    },
    "ada-s06": {
        "goals": ["Fix JPY/KWD amount formatting in the dashboard", "Keep PR under 300 changed lines"],
        "current_task": "Draft PR #498: format money with Intl.NumberFormat",
        "retrieved_context": [
            "ISO 4217 exponents: JPY and KRW have 0 minor units, KWD and BHD have 3, most others 2.",
            "In TypeScript, format money with Intl.NumberFormat rather than hand-written currency tables.",
            "Money is Decimal in code and integer minor units in the database.",
        ],
        "scratchpad": "exponent = new Intl.NumberFormat('en', {style:'currency', currency}).resolvedOptions()"
        ".maximumFractionDigits; amount / 10 ** exponent",
        "last_observation": "Tests  13 passed (13)",
        "intermediate_reasoning": "compact.ts forced maximumFractionDigits: 2, which hid the KWD exponent; "
        "removing the override lets Intl pick 3.",
        "open_questions": ["Does the CSV export use formatMoney()?", "KWD: show code or symbol? (ask Hana)"],
    },
    "tomas-s05": {
        "goals": ["Vienna Christmas markets 18–21 Dec", "Moderate, step-free walking for parents"],
        "current_task": "Finalise Vienna bookings and budget",
        "budget_eur": {
            "cap": 2000,
            "committed": 1482.60,
            "remaining": 517.40,
            "lines": {"hotel": 1323, "trains": 159.60},
        },
        "last_observation": "Gasthaus Pöschl: table for 4 on 19 Dec at 19:00 confirmed",
        "open_questions": ["Do parents want a market tour guide?", "Taxi or tram from Wien Hbf to the hotel?"],
    },
    "tomas-s06": {
        "current_task": "Japan expense wrap-up",
        "last_observation": "Machiya host has not yet returned the €50 key deposit",
        "budget_eur": {"cap": 6500, "planned": 5880, "actual": 6222},
        "scratchpad": "Spring ideas: Nice (rail ~9h), Lake Garda (5h30, cool), Sicily/Madeira (flight)",
    },
    "mira-s04": {
        "current_task": "Ch2 introduction draft",
        "last_observation": "Quarto render: 0 warnings after merging 14 duplicate bib entries",
        "scratchpad": "Intro 1,180 words → target ≤ 1,000; cut paragraph 2 examples",
    },
    "mira-s05": {
        "goals": ["Committee talk on 10 Dec", "Reviewer response by 15 Dec"],
        "current_task": "Draft response letter, R2.3 sensitivity analysis",
        "retrieved_context": [
            "Robustness simulations use bipartite::second.extinct with 1,000 iterations and the R50 metric.",
            "Reviewer response for the Ch1 paper is due 15 December 2026.",
        ],
        "intermediate_reasoning": "Three extinction orders × 12 networks × 1,000 iterations ≈ 40 min on 8 cores; "
        "run tonight, write results tomorrow.",
        "open_questions": [
            "Report R50 or full attack curves in the supplement?",
            "Does R1 accept the rewiring caveat?",
        ],
        "slides_outline": [
            "Title",
            "Overview",
            "Ch2 model",
            "Ch2 elevation effect",
            "Ch2 specialisation",
            "Ch3 status",
            "Ch3 timeline",
            "Ch4 design",
            "Ch4 pilot",
            "Timeline",
            "Open questions",
            "Backup: temperature resolution",
        ],
    },
}

FORGET_LOG = [  # (user, memory_type, ids or item keys, mode, reason, actor, at)
    (
        A,
        "semantic",
        ["ada-old-black", "ada-old-host"],
        "soft",
        "Superseded: ruff replaced black; staging host renamed.",
        "ada",
        "10-30 09:00",
    ),
    (
        A,
        "episodic",
        ["ep-ada-00-pii"],
        "hard",
        "Episode contained a customer email address copied from a support ticket (PII).",
        "memlens-admin",
        "08-02 17:45",
    ),
    (
        T,
        "semantic",
        ["tom-old-seat", "tom-old-tokyo"],
        "soft",
        "Corrected by user: Lucía prefers window; Tokyo dropped from the plan.",
        "tomas",
        "08-26 09:30",
    ),
    (
        M,
        "semantic",
        ["mira-old-samuel", "mira-old-journal"],
        "soft",
        "Outdated: Samuel's ID scope changed; Ch2 target journal is now Oikos.",
        "agent",
        "10-22 11:00",
    ),
]


# ============================================================================================================
# TWO-HOP QUESTIONS (fact ids are item keys here; resolved to item ids on output)
# ============================================================================================================
TWO_HOP = [
    (
        A,
        "Which timezone does the engineer who owns the refund reconciliation job work in?",
        "ada-q1-a",
        "Priya Raman",
        "ada-q1-b",
        "India Standard Time (IST): Priya Raman is based in Bangalore.",
    ),
    (
        A,
        "Who has to sign off on changes to the checkout retry policy?",
        "ada-q2-a",
        "Kestrel",
        "ada-q2-b",
        "Daniel Osei, who leads the Kestrel squad and approves every merge.",
    ),
    (
        A,
        "Which cloud region hosts the service that computes merchant payout fees?",
        "ada-q3-a",
        "Osprey",
        "ada-q3-b",
        "eu-central-1 (Osprey runs on EKS there, with a read replica in eu-west-1).",
    ),
    (
        T,
        "Which language does the guide for the Kyoto temple tour speak besides Japanese?",
        "tom-q4-a",
        "Haruto Sato",
        "tom-q4-b",
        "Spanish (Haruto Sato studied in Salamanca for six years).",
    ),
    (
        T,
        "What medication must the friend joining the Dolomites trek carry?",
        "tom-q5-a",
        "Lukas Berger",
        "tom-q5-b",
        "An EpiPen: Lukas Berger has a severe bee-sting allergy.",
    ),
    (
        M,
        "At what altitude is the field station used for the bumblebee warming experiment?",
        "mira-q6-a",
        "Alp Flix",
        "mira-q6-b",
        "About 1,970 metres above sea level (Alp Flix).",
    ),
    (
        M,
        "Which statistics package does the co-author of the soil microbiome paper recommend?",
        "mira-q7-a",
        "Elena Petrova",
        "mira-q7-b",
        "glmmTMB (Elena Petrova also dislikes lme4).",
    ),
]


# ============================================================================================================
# BUILD
# ============================================================================================================
ROLE_GAP = {"system": 0, "user": 95, "assistant": 35, "tool": 6, "tool_result": 3}


def build() -> tuple[list[dict], list[dict]]:
    rng = random.Random(SEED)
    records: list[dict] = []

    # --- messages ------------------------------------------------------------------------------------------
    session_end: dict[str, datetime] = {}
    session_by_user_date: dict[tuple[str, str], str] = {}
    for user, sid, start, msgs in SESSIONS:
        t = ts(start)
        for i, (role, content) in enumerate(msgs):
            if i:
                t += timedelta(seconds=ROLE_GAP[role] + (len(content) * 7) % 50)
            records.append(
                {
                    "kind": "message",
                    "user_id": user,
                    "session_id": sid,
                    "role": role,
                    "content": content,
                    "created_at": iso(t),
                }
            )
        session_end[sid] = t
        session_by_user_date[(user, start[:5])] = sid

    # --- items ---------------------------------------------------------------------------------------------
    key_to_id: dict[str, str] = {}
    per_user_n: Counter = Counter()
    per_session_k: Counter = Counter()
    items_out: list[dict] = []
    for it in ITEMS:
        user = it["user"]
        per_user_n[user] += 1
        n = per_user_n[user]
        iid = f"{user}-item-{n:03d}"
        if it["key"]:
            key_to_id[it["key"]] = iid
        day = it["date"][:5]
        sid = session_by_user_date.get((user, day))
        if " " in it["date"]:
            created = ts(it["date"])
        elif sid:
            per_session_k[sid] += 1
            created = session_end[sid] + timedelta(minutes=2 + 3 * per_session_k[sid])
        else:
            created = ts(day) + timedelta(minutes=7 * 60 + (n * 37) % 600)
        if sid:
            source, sources = "conversation", [{"type": "session", "id": sid}]
            conf = it["conf"] or round(0.6 + 0.35 * it["importance"], 2)
        else:
            source = it["src"] or (
                "import" if it["category"] == "literature" else "manual" if it["evergreen"] or n % 3 else "reflection"
            )
            sources = []
            conf = it["conf"] or round(0.5 + 0.3 * it["importance"], 2)
        rec = {
            "kind": "item",
            "user_id": user,
            "id": iid,
            "category": it["category"],
            "content": it["content"],
            "importance": it["importance"],
            "evergreen": it["evergreen"],
            "created_at": iso(created),
            "source": source,
            "provenance": {"sources": sources, "method": "demo", "confidence": conf, "created_at": iso(created)},
        }
        if it["archived"]:
            rec["archived_at"] = iso(ts(it["archived"]))
        if it["pre"]:
            rec["preceding_text"] = it["pre"]
        items_out.append(rec)
    records += items_out

    # --- categories ----------------------------------------------------------------------------------------
    for user, cats in CATEGORIES.items():
        for name, summary in cats.items():
            records.append({"kind": "category", "user_id": user, "name": name, "summary": summary})

    # --- episodes ------------------------------------------------------------------------------------------
    episode_end: dict[str, datetime] = {}
    for ep in EPISODES:
        t0 = ts(ep["start"])
        steps = []
        for i, (obs, act, res) in enumerate(ep["steps"]):
            steps.append(
                {"observation": obs, "action": act, "result": res, "timestamp": iso(t0 + timedelta(minutes=4 * i))}
            )
        episode_end[ep["id"]] = t0 + timedelta(minutes=4 * (len(steps) - 1))
        rec = {
            "kind": "episode",
            "user_id": ep["user"],
            "id": ep["id"],
            "session_id": ep["session_id"],
            "steps": steps,
            "outcome": ep["outcome"],
            "importance": ep["importance"],
            "created_at": iso(t0),
        }
        if ep["summary"]:
            rec["summary"] = ep["summary"]
        records.append(rec)

    # --- skills + outcomes ---------------------------------------------------------------------------------
    next_version_at: dict[str, datetime] = {}
    by_name: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for sk in SKILLS:
        by_name[(sk["user"], sk["name"])].append(sk)
    for versions in by_name.values():
        versions.sort(key=lambda s: s["version"])
        for a, b in zip(versions, versions[1:]):
            next_version_at[a["id"]] = ts(b["date"])
    linked: dict[str, list[tuple[str, bool, datetime]]] = defaultdict(list)
    for ep in EPISODES:
        if ep["skill"]:
            ok = ep["skill_ok"] if ep["skill_ok"] is not None else ep["outcome"] in ("success", "recovered")
            linked[ep["skill"]].append((ep["id"], ok, episode_end[ep["id"]] + timedelta(minutes=1)))
    outcomes: list[dict] = []
    for sk in SKILLS:
        created = ts(sk["date"])
        records.append(
            {
                "kind": "skill",
                "user_id": sk["user"],
                "id": sk["id"],
                "name": sk["name"],
                "skill_kind": sk["kind"],
                "description": sk["description"],
                "body": sk["body"],
                "version": sk["version"],
                "created_at": iso(created),
            }
        )
        lk = linked.get(sk["id"], [])
        rest_s = sk["s"] - sum(1 for _, ok, _ in lk if ok)
        rest_f = sk["f"] - sum(1 for _, ok, _ in lk if not ok)
        assert rest_s >= 0 and rest_f >= 0, f"linked outcomes exceed declared counts for {sk['id']}"
        end = min(next_version_at.get(sk["id"], NOW), NOW)
        span = (end - created).total_seconds()
        flags = [True] * rest_s + [False] * rest_f
        rng.shuffle(flags)
        times = sorted(created + timedelta(seconds=60 + rng.random() * (span - 120)) for _ in flags)
        outs = [(None, ok, t) for ok, t in zip(flags, times)] + lk
        for eid, ok, t in sorted(outs, key=lambda o: o[2]):
            assert created <= t <= NOW, (sk["id"], t)
            outcomes.append(
                {
                    "kind": "outcome",
                    "user_id": sk["user"],
                    "skill_id": sk["id"],
                    "success": ok,
                    "episode_id": eid,
                    "at": iso(t),
                }
            )
    records += outcomes

    # --- feedback ------------------------------------------------------------------------------------------
    for user, key, label, note, at in FEEDBACK:
        records.append(
            {
                "kind": "feedback",
                "user_id": user,
                "item_id": key_to_id[key],
                "label": label,
                "note": note,
                "created_at": iso(ts(at)),
            }
        )

    # --- working memory ------------------------------------------------------------------------------------
    user_of_session = {sid: user for user, sid, _, _ in SESSIONS}
    for sid, slots in WORKING.items():
        for slot, value in slots.items():
            records.append(
                {"kind": "working", "user_id": user_of_session[sid], "session_id": sid, "slot": slot, "value": value}
            )

    # --- forget log ----------------------------------------------------------------------------------------
    for user, mtype, ids, mode, reason, actor, at in FORGET_LOG:
        real = [key_to_id.get(i, i) if mode == "soft" else i for i in ids]
        records.append(
            {
                "kind": "forget_log",
                "user_id": user,
                "memory_type": mtype,
                "ids": real,
                "count": len(real),
                "mode": mode,
                "reason": reason,
                "actor": actor,
                "at": iso(ts(at)),
            }
        )

    two_hop = [
        {"user_id": u, "question": q, "fact_a": key_to_id[a], "bridge": br, "fact_b": key_to_id[b], "answer": ans}
        for u, q, a, br, b, ans in TWO_HOP
    ]
    return records, two_hop


# ============================================================================================================
# VERIFY
# ============================================================================================================
ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@+-]{0,127}$")
WORD_RE = re.compile(r"[a-z0-9]+")


def words4(text: str) -> set[str]:
    """4+-letter words, two ways: splitting on punctuation and dropping it inside tokens (co-author→coauthor)."""
    low = text.lower()
    split = {w for w in WORD_RE.findall(low) if len(w) >= 4}
    joined = {re.sub(r"[^a-z0-9]", "", w) for w in low.split()}
    return split | {w for w in joined if len(w) >= 4}


def lexical_rank(question: str, target: str, pool: list[dict]) -> int:
    """Rank of target among pool items by a crude overlap score (shared 4+ words / sqrt(len))."""
    qw = words4(question)

    def score(it):
        w = words4(it["content"])
        return len(qw & w) / (len(w) ** 0.5 or 1)

    ranked = sorted(pool, key=score, reverse=True)
    return [r["id"] for r in ranked].index(target) + 1


def verify(path: Path, two_hop: list[dict]) -> dict:
    lines = path.read_text(encoding="utf-8").splitlines()
    recs = [json.loads(line) for line in lines]  # every line must be valid JSON
    by_kind: dict[str, list[dict]] = defaultdict(list)
    for r in recs:
        by_kind[r["kind"]].append(r)
    errors: list[str] = []

    def check(cond, msg):
        if not cond:
            errors.append(msg)

    iso_ok = lambda s: datetime.fromisoformat(s).tzinfo is not None and s.endswith("+00:00")
    users = {"ada", "tomas", "mira"}
    # ids: valid + unique per kind
    for kind in ("item", "episode", "skill"):
        ids = [r["id"] for r in by_kind[kind]]
        check(len(ids) == len(set(ids)), f"duplicate {kind} ids")
        for i in ids:
            check(bool(ID_RE.match(i)), f"bad {kind} id {i}")
    sessions = {(r["user_id"], r["session_id"]) for r in by_kind["message"]}
    for _, sid in sessions:
        check(bool(ID_RE.match(sid)), f"bad session id {sid}")
    items = {r["id"]: r for r in by_kind["item"]}
    episodes = {r["id"]: r for r in by_kind["episode"]}
    skills = {r["id"]: r for r in by_kind["skill"]}
    for r in recs:
        check(r.get("user_id") in users, f"unknown user in {r}")
        for f in ("created_at", "at"):
            if f in r:
                check(iso_ok(r[f]) and datetime.fromisoformat(r[f]) <= NOW, f"bad time {r[f]}")
    # messages chronological per session, roles valid, dates in range
    last: dict[str, datetime] = {}
    for m in by_kind["message"]:
        check(m["role"] in ("user", "assistant", "system", "tool", "tool_result"), f"bad role {m['role']}")
        t = datetime.fromisoformat(m["created_at"])
        check(t >= last.get(m["session_id"], t), f"messages out of order in {m['session_id']}")
        check(datetime(2026, 6, 1, tzinfo=UTC) <= t, "message before June")
        last[m["session_id"]] = t
    # items
    for it in items.values():
        check(re.fullmatch(r"[a-z][a-z0-9_]*", it["category"]) is not None, f"category {it['category']}")
        check(0 <= it["importance"] <= 1, f"importance {it['id']}")
        for s in it["provenance"]["sources"]:
            check((it["user_id"], s["id"]) in sessions, f"item {it['id']} -> unknown session {s['id']}")
    cats = {(c["user_id"], c["name"]) for c in by_kind["category"]}
    for it in items.values():
        check((it["user_id"], it["category"]) in cats, f"no category summary for {it['category']}")
    # episodes
    for ep in episodes.values():
        check(ep["outcome"] in ("success", "failure", "partial", "recovered"), f"outcome {ep['id']}")
        check(2 <= len(ep["steps"]) <= 6, f"steps {ep['id']}")
        if ep["session_id"] is not None:
            check((ep["user_id"], ep["session_id"]) in sessions, f"episode {ep['id']} session")
    # skills / outcomes
    for sk in skills.values():
        check(sk["skill_kind"] in ("prompt", "template", "code"), f"skill kind {sk['id']}")
    versions = Counter((s["user_id"], s["name"], s["version"]) for s in skills.values())
    check(max(versions.values()) == 1, "duplicate skill versions")
    for o in by_kind["outcome"]:
        sk = skills.get(o["skill_id"])
        check(sk is not None and sk["user_id"] == o["user_id"], f"outcome -> skill {o['skill_id']}")
        if o["episode_id"] is not None:
            ep = episodes.get(o["episode_id"])
            check(ep is not None and ep["user_id"] == o["user_id"], f"outcome -> episode {o['episode_id']}")
    # feedback
    for fb in by_kind["feedback"]:
        it = items.get(fb["item_id"])
        check(it is not None and it["user_id"] == fb["user_id"], f"feedback -> {fb['item_id']}")
        check(fb["label"] in ("useful", "harmful"), "feedback label")
        if it:
            check(fb["created_at"] >= it["created_at"], f"feedback before item {fb['item_id']}")
    # working
    for w in by_kind["working"]:
        check((w["user_id"], w["session_id"]) in sessions, f"working -> session {w['session_id']}")
    # forget log
    archived = {i for i, it in items.items() if "archived_at" in it}
    soft_ids: set[str] = set()
    for fl in by_kind["forget_log"]:
        check(fl["count"] == len(fl["ids"]), "forget count")
        for i in fl["ids"]:
            if fl["mode"] == "soft":
                it = items.get(i)
                check(
                    it is not None and "archived_at" in it and it["user_id"] == fl["user_id"],
                    f"soft forget {i} not an archived item",
                )
                soft_ids.add(i)
            else:
                check(i not in items and i not in episodes and i not in skills, f"hard forget {i} still present")
    check(archived == soft_ids, "archived items and soft forget entries differ")
    # two-hop
    hop_report = []
    for q in two_hop:
        a, b, br, question = items[q["fact_a"]], items[q["fact_b"]], q["bridge"], q["question"]
        check(a["user_id"] == b["user_id"] == q["user_id"], "two-hop user mismatch")
        check(br in a["content"] and br in b["content"], f"bridge {br} not in A and B")
        check(br.lower() not in question.lower(), f"bridge {br} in question")
        shared_b = words4(b["content"]) & words4(question)
        check(not shared_b, f"fact B shares words with question: {shared_b}")
        shared_a = words4(a["content"]) & words4(question)
        check(len(shared_a) >= 2, f"fact A shares too few words with question: {shared_a}")
        # only one capitalised proper noun in A that is not in the question: the bridge
        toks = re.findall(r"[A-Za-z][A-Za-z'-]*", a["content"])
        qlow = {t.lower() for t in re.findall(r"[A-Za-z][A-Za-z'-]*", question)}
        caps = {
            t for i, t in enumerate(toks) if t[0].isupper() and t.lower() not in qlow and not (i == 0 and t == "The")
        }
        check(caps <= set(br.split()), f"fact A has extra capitalised words {caps - set(br.split())}")
        # the bridge must not appear anywhere else in this user's data
        for r in recs:
            if r["user_id"] != q["user_id"] or r.get("id") in (a["id"], b["id"]):
                continue
            check(
                br.lower() not in json.dumps(r, ensure_ascii=False).lower(),
                f"bridge {br} also appears in {r['kind']} {r.get('id', r.get('session_id'))}",
            )
        pool = [it for it in items.values() if it["user_id"] == q["user_id"]]
        hop_report.append(
            (q["question"], lexical_rank(question, a["id"], pool), lexical_rank(question, b["id"], pool), len(pool))
        )
    # minimums
    n_sessions = len(sessions)
    skill_names = {(s["user_id"], s["name"]) for s in skills.values()}
    multi = [k for k, v in Counter((s["user_id"], s["name"]) for s in skills.values()).items() if v > 1]
    cats_per_user = {u: len({it["category"] for it in items.values() if it["user_id"] == u}) for u in users}
    working_sessions = {w["session_id"] for w in by_kind["working"]}
    no_summary = sum(1 for e in episodes.values() if "summary" not in e)
    check(n_sessions >= 12, "sessions < 12")
    check(len(by_kind["message"]) >= 200, "messages < 200")
    check(len(working_sessions) >= 5, "working sessions < 5")
    check(len(items) >= 150, "items < 150")
    check(min(cats_per_user.values()) >= 4, "categories per user < 4")
    check(len(episodes) >= 30, "episodes < 30")
    check(len(skill_names) >= 15, "skill names < 15")
    check(len(multi) >= 6, "multi-version skill names < 6")
    check(len(two_hop) >= 5 and {q["user_id"] for q in two_hop} == users, "two-hop coverage")
    check(
        any(m["role"] in ("tool", "tool_result") for m in by_kind["message"] if m["user_id"] == "ada"),
        "no tool messages for ada",
    )
    if errors:
        print("VERIFY FAILED:", *errors, sep="\n  ")
        sys.exit(1)
    return {
        "lines": len(recs),
        "users": len(users),
        "sessions": n_sessions,
        "messages": len(by_kind["message"]),
        "tool/tool_result messages": sum(m["role"] in ("tool", "tool_result") for m in by_kind["message"]),
        "working slots": len(by_kind["working"]),
        "working sessions": len(working_sessions),
        "items": len(items),
        "archived items": len(archived),
        "evergreen items": sum(i["evergreen"] for i in items.values()),
        "categories (summaries)": len(cats),
        "categories per user": cats_per_user,
        "episodes": len(episodes),
        "episodes without summary": no_summary,
        "episode outcomes": dict(Counter(e["outcome"] for e in episodes.values())),
        "skill records": len(skills),
        "skill names": len(skill_names),
        "multi-version names": len(multi),
        "outcomes": len(by_kind["outcome"]),
        "outcomes linked to episodes": sum(o["episode_id"] is not None for o in by_kind["outcome"]),
        "feedback": len(by_kind["feedback"]),
        "forget_log": len(by_kind["forget_log"]),
        "two-hop questions": len(two_hop),
        "first/last message": (
            min(m["created_at"] for m in by_kind["message"]),
            max(m["created_at"] for m in by_kind["message"]),
        ),
        "_hop": hop_report,
    }


def main() -> None:
    records, two_hop = build()
    with OUT.open("w", encoding="utf-8", newline="\n") as fh:
        for r in records:
            fh.write(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n")
    TWO_HOP_OUT.write_text(json.dumps(two_hop, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    stats = verify(OUT, two_hop)
    hop = stats.pop("_hop")
    print(f"wrote {OUT.name} and {TWO_HOP_OUT.name}; verification passed")
    for k, v in stats.items():
        print(f"  {k}: {v}")
    print("  two-hop lexical ranks (fact A / fact B among the user's items):")
    for q, ra, rb, n in hop:
        print(f"    A#{ra:<3} B#{rb:<3} of {n}  {q}")
    per_skill = Counter()
    for r in records:
        if r["kind"] == "outcome":
            per_skill[(r["skill_id"], r["success"])] += 1
    print(
        "  skill histories (successes/trials): "
        + ", ".join(
            f"{s['id']} {per_skill[(s['id'], True)]}/{per_skill[(s['id'], True)] + per_skill[(s['id'], False)]}"
            for s in SKILLS
        )
    )


if __name__ == "__main__":
    main()
