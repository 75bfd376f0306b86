"""The mail benchmark's PGP row: maskmail forwarding with every mailbox holding an OpenPGP
key, against the same server and messages without keys.

    .venv/bin/python -m bench.mail_pgp [--backends sqlite] [--mail-messages 500] [--mail-reps 3]

One maskmail server and sink per backend (``bench.mail``); rounds alternate without keys,
with keys (the keys are added and removed between rounds, in the database the running
server reads). Prints a markdown table of medians and the ratio, the median of each
round's own; docs/benchmarks.md ("PGP") keeps them.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

import pysequoia
from sqlalchemy import delete, false, insert, literal, select

from bench.lab import Database
from bench.mail import Key, MailFigures, Sink, measure, running_maskmail
from bench.mail_report import add_arguments, plan_from, round_ratio, table
from maskmail.openpgp import check_key
from maskmail.store.engine import create_engine, transaction
from maskmail.store.tables import mailbox_keys, mailboxes

VARIANTS = ("no key", "PGP")


def make_key() -> str:
    """A fresh Ed25519 key with a Cv25519 encryption subkey (gpg's default kind), armored."""
    profile = pysequoia.Profile.RFC4880  # version 4, as nearly every key in use
    return str(pysequoia.Tsk.generate("bench@example.org", profile=profile).extract_certificate())


async def _set_keys(url: str, armored: str | None) -> None:
    engine = create_engine(url)
    try:
        async with transaction(engine) as conn:
            await conn.execute(delete(mailbox_keys))
            if armored is not None:
                facts = check_key(armored)
                rows = select(
                    mailboxes.c.id,
                    literal(armored),
                    literal(facts.fingerprint),
                    false(),
                    literal(0),
                )
                columns = ["mailbox_id", "public_key", "fingerprint", "encrypt_subject"]
                await conn.execute(
                    insert(mailbox_keys).from_select([*columns, "created_time"], rows)
                )
    finally:
        await engine.dispose()


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--backends", default="sqlite")
    add_arguments(p)
    p.set_defaults(mail_messages=500)
    args = p.parse_args(argv)
    results: dict[Key, list[MailFigures]] = {}
    armored = make_key()
    with tempfile.TemporaryDirectory() as work:
        for backend in args.backends.split(","):
            plan = plan_from(args, [backend], Path(work))
            databases: list[Database] = []
            sink = Sink(Path(work) / f"sink-{backend}.log")
            try:
                with running_maskmail(backend, plan, sink, print, databases.append) as server:
                    url = databases[0].url
                    measure(server, plan, plan.warmup, load_seed=1000)
                    for rep in range(plan.reps):
                        for variant in VARIANTS:
                            asyncio.run(_set_keys(url, armored if variant == "PGP" else None))
                            fig = measure(server, plan, plan.messages, load_seed=rep)
                            results.setdefault((backend, variant), []).append(fig)
                            print(f"[{backend}] {variant:6} #{rep + 1}: {fig.rate:7.0f} msg/s")
            finally:
                sink.stop()
    print(f"\n{plan.messages} messages of {plan.size} bytes per round, {plan.reps} rounds")
    # The "x Postfix" column stays empty: no Postfix in this run.
    print("\n".join(table(results)))
    print("\n| backend | PGP / no key, msg/s (median of per-round ratios) |\n|---|---:|")
    for backend in args.backends.split(","):
        ratio = round_ratio(results[backend, "PGP"], results[backend, "no key"])
        print(f"| {backend} | {ratio:.2f} |" if ratio is not None else f"| {backend} | - |")


if __name__ == "__main__":
    main(sys.argv[1:])
