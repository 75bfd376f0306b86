"""``maskmail doctor``: one line per piece of a deployment, and the fix of what fails."""

from __future__ import annotations

from typing import Annotated

import typer

from maskmail.cli.common import settings


def doctor(
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object, for monitoring.")
    ] = False,
    milter: Annotated[
        str, typer.Option(help="host:port of rspamd's milter (Postfix's smtpd_milters).")
    ] = "127.0.0.1:11332",
    policy_host: Annotated[
        str,
        typer.Option(help="Host of the policy port (MASKMAIL_POLICY_PORT), as Postfix asks it."),
    ] = "127.0.0.1",
) -> None:
    """Check the database, Redis, DNS, the DKIM key, the policy service, rspamd, the
    smarthost, the data directory and the clock; exit 1 unless every check passes."""
    import asyncio
    import json

    from maskmail.config import split_host_port
    from maskmail.doctor import Doctor

    try:
        milter_address = split_host_port(milter)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--milter") from exc
    checks = asyncio.run(Doctor(settings(), milter=milter_address, policy_host=policy_host).run())
    healthy = all(c.ok for c in checks)
    if as_json:
        typer.echo(json.dumps({"ok": healthy, "checks": [c.json() for c in checks]}))
    else:
        for check in checks:
            typer.echo(f"{'✓' if check.ok else '✗'} {check.name}: {check.detail}")
    if not healthy:
        raise typer.Exit(1)
