"""``maskmail domains``: users' custom domains."""

from __future__ import annotations

import typer

from maskmail.cli.common import done, plural, settings

app = typer.Typer(help="Users' custom domains.", no_args_is_help=True)


@app.command("check")
def domains_check() -> None:
    """Look up every custom domain's records again (run it from a timer): a record that
    went away is marked, and the domain's owner is told once, at their default mailbox."""
    import asyncio

    from maskmail.mail.plane import outbound_for
    from maskmail.services.domain_checks import check_all
    from maskmail.store.engine import create_engine

    config = settings()

    async def run() -> list[str]:
        engine = create_engine(config.resolved_database_url, pool_size=1, timeout=config.db_timeout)
        outbound = outbound_for(config)
        try:
            outcomes = await check_all(config, engine, outbound)
        finally:
            await outbound.close()
            await engine.dispose()
        return [
            f"{o.domain}: "
            + (f"no longer passes {', '.join(o.gone)}" if o.gone else "nothing went away")
            + ("; owner warned" if o.warned else "")
            for o in outcomes
        ]

    lines = asyncio.run(run())
    for line in lines:
        typer.echo(line)
    done(f"checked {plural(len(lines), 'custom domain')}")
