"""``ftops db start|stop|upgrade|status|prune``: the history store (``FTOPS_DATABASE_URL`` or the embedded server)."""

from __future__ import annotations

import argparse
from ft_core.cli.output import print_json
from ft_core.cli.registry import add_renamed_flag
from ft_core.home import path_flag
from ft_core.input.quantities import Port, RetentionDays, flag
from ft_core.store.connection import connect, redact
from ft_core.store.url import DEFAULT_EMBEDDED_DIR, database_url


def add_db_dir_argument(parser: argparse.ArgumentParser, when: str = "") -> None:
    """``--db-dir``: the embedded PostgreSQL folder a command opens the history store in, when
    ``FTOPS_DATABASE_URL`` is not set (``when``: a condition the help text starts with)."""
    parser.add_argument("--db-dir", type=path_flag, default=DEFAULT_EMBEDDED_DIR,
                        help=f"{when}embedded PostgreSQL folder (when FTOPS_DATABASE_URL is not set)")


def register(sub, groups) -> None:
    db = sub.add_parser("db", help="the PostgreSQL history store")
    dsub = db.add_subparsers(dest="db_command", required=True, parser_class=type(db))
    for name, func, text in (("start", _start, "start the embedded PostgreSQL (initialised on first use)"),
                             ("stop", _stop, "stop the embedded PostgreSQL"),
                             ("upgrade", _upgrade, "apply pending schema migrations from sql/ (idempotent)"),
                             ("status", _status, "schema version and row counts"),
                             ("prune", _prune, "delete old stream progress rows and rates profiles (FTOPS_RETENTION; "
                                               "ftops_safety_net does it at every run)")):
        p = dsub.add_parser(name, help=text)
        add_renamed_flag(p, "--db-dir", "--state-dir", type=path_flag, default=DEFAULT_EMBEDDED_DIR,
                         help="embedded PostgreSQL folder (default %(default)s)")
        p.add_argument("--port", type=flag(Port), default=5433, help="embedded server port (default 5433)")
        p.add_argument("--json", action="store_true", help="print the result as JSON")
        p.set_defaults(func=func)
        if name == "prune":
            p.add_argument("--progress-days", type=flag(RetentionDays), help="keep stream progress rows this many days "
                           "(default: FTOPS_RETENTION's, else 7; rows around a drill stay)")
            p.add_argument("--profile-days", type=flag(RetentionDays), help="keep rates profiles this many days "
                           "(default: FTOPS_RETENTION's, else 30; each job's newest stays)")


def _start(args: argparse.Namespace) -> int:
    from ft_core.store.embedded import EmbeddedPostgres

    server = EmbeddedPostgres(args.db_dir, args.port)
    server.start()
    doc = {"running": True, "database": redact(server.url()), "password_file": str(server.state_dir / "password")}
    if args.json:
        print_json(doc)
    else:
        print(f"PostgreSQL running: {doc['database']} (password in {doc['password_file']})")
    return 0


def _stop(args: argparse.Namespace) -> int:
    from ft_core.store.embedded import EmbeddedPostgres

    stopped = EmbeddedPostgres(args.db_dir, args.port).stop()
    if args.json:
        print_json({"stopped": bool(stopped)})
    else:
        print("PostgreSQL stopped" if stopped else "PostgreSQL was not running")
    return 0


def _upgrade(args: argparse.Namespace) -> int:
    from ft_core.store.migrations import current_version, upgrade

    conn = connect(database_url(args.db_dir))
    try:
        applied = upgrade(conn)
        version = current_version(conn)
    finally:
        conn.close()
    if args.json:
        print_json({"schema_version": version, "applied": list(applied)})
    else:
        print(f"schema at version {version}" + (f" (applied {', '.join(map(str, applied))})" if applied else " (up to date)"))
    return 0


def _status(args: argparse.Namespace) -> int:
    from ft_core.store.migrations import current_version

    url = database_url(args.db_dir)
    conn = connect(url)
    try:
        version = current_version(conn)
        counts, streams = {}, []
        if version:
            with conn, conn.cursor() as cur:
                for table in ("ftops_job", "ftops_plan", "ftops_drill", "ftops_recovery_run"):
                    cur.execute(f"SELECT count(*) FROM {table}")  # fixed table names, no user input
                    counts[table] = cur.fetchone()[0]
            streams = _reporting_streams(conn) if version >= STREAM_PROGRESS_VERSION else []
    finally:
        conn.close()
    doc = {"database": redact(url), "schema_version": version, "rows": counts, "streams_reporting": streams}
    if args.json:
        print_json(doc)
    else:
        print(f"{doc['database']}: schema version {version}; " + ", ".join(f"{k} {v}" for k, v in counts.items()))
        print(f"streams writing progress (last {RECENT_S // 60:.0f} min): " + (", ".join(
            f"{s['stream']} ({s['batches']} batch{'' if s['batches'] == 1 else 'es'}, the last {s['last_batch_s_ago']:.0f} s ago)"
            for s in streams) or "none"))
    return 0


def _prune(args: argparse.Namespace) -> int:
    from ft_core.store.history import HistoryStore
    from ft_core.store.retention import Retention

    retention = Retention.from_env()
    retention = retention.model_copy(update={k: v for k, v in (("progress_days", args.progress_days),
                                                               ("profile_days", args.profile_days)) if v is not None})
    conn = connect(database_url(args.db_dir))
    try:
        pruned = HistoryStore(conn).prune(retention)
    finally:
        conn.close()
    if args.json:
        print_json(pruned.model_dump(mode="json"))
    else:
        print(pruned.summary())
    return 0


STREAM_PROGRESS_VERSION = 7  # the migration that adds ftops_stream_progress
RECENT_S = 600.0


def _reporting_streams(conn) -> list[dict]:
    """The streams whose drivers wrote micro-batches in the last ``RECENT_S`` (the drill's waits read those rows; a
    running stream missing here is read from its folders)."""
    with conn, conn.cursor() as cur:
        cur.execute("""SELECT stream, count(*), extract(epoch FROM now() - max(batch_end))::float8 FROM ftops_stream_progress
                       WHERE batch_end > now() - make_interval(secs => %s) GROUP BY stream ORDER BY stream""", (RECENT_S,))
        return [{"stream": s, "batches": n, "last_batch_s_ago": round(max(0.0, ago), 1)} for s, n, ago in cur.fetchall()]
