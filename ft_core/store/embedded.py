"""A private PostgreSQL server for ftops, from the machine's own PostgreSQL binaries.

Why the system binaries and not a pip-packaged server: PostgreSQL 15 is on the project's machines
(and on most Linux hosts as a package), it is the server users run in production, and the
pip-packaged servers lag behind by major versions. The server listens on one address, loopback unless
``FTOPS_DB_HOST`` names another (the address is recorded with the port, so its URL follows), on its
own port (5433 by default), with its data under the project's state folder and scram-sha-256
authentication for a generated password kept in ``<state_dir>/password`` (mode 0600).
PostgreSQL refuses to run as root; as root, the server runs as the ``postgres`` system user.
"""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ft_core.errors import ExternalError, InputError
from ft_core.local_ports import port_taken
from ft_core.store.connection import connect

DATABASE = "ftops"
HOST_ENV = "FTOPS_DB_HOST"  # the address the embedded server listens on (module docstring)
# Without FTOPS_DB_HOST: loopback. The embedded server is a development store for this machine; a store other hosts
# reach is named by FTOPS_DATABASE_URL or Airflow's ftops_db connection, not served from here.
DEFAULT_HOST = "127.0.0.1"
USER = "ftops"


class EmbeddedPostgres:
    def __init__(self, state_dir: Path, port: int = 5433, host: str | None = None):
        self.state_dir = Path(state_dir).resolve()
        self.port = port
        self.host = host or listen_host()
        self.data = self.state_dir / "data"
        self.log = self.state_dir / "server.log"

    # -- facts -----------------------------------------------------------------------------
    def running(self) -> bool:
        pid_file = self.data / "postmaster.pid"
        if not pid_file.exists():
            return False
        try:
            pid = int(pid_file.read_text().split()[0])
            os.kill(pid, 0)
            return True
        except (ValueError, IndexError, ProcessLookupError):
            return False
        except PermissionError:
            return True

    def url(self) -> str:
        recorded = self._recorded()
        return (f"postgresql://{USER}:{self._password()}@{recorded.get('host', self.host)}:"
                f"{recorded.get('port', self.port)}/{DATABASE}")

    # -- actions ---------------------------------------------------------------------------
    def start(self) -> None:
        """Initialise on first use, then start (a no-op when already running)."""
        if self.running():
            return
        self._refuse_taken_port()  # before anything is written
        self.state_dir.mkdir(parents=True, exist_ok=True)
        if not (self.data / "PG_VERSION").exists():
            self._initdb()
        self._run([self._binary("pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "-o",
                   f"-p {self.port} -c listen_addresses={self.host} -c unix_socket_directories=''", "start"],
                  f"starting PostgreSQL on {self.host}:{self.port} (log: {self.log})")
        (self.state_dir / "server.json").write_text(json.dumps({"port": self.port, "host": self.host}))
        self._ensure_database()

    def stop(self) -> bool:
        if not self.running():
            return False
        self._run([self._binary("pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop"], "stopping PostgreSQL")
        return True

    # -- helpers ---------------------------------------------------------------------------
    def _refuse_taken_port(self) -> None:
        """InputError naming the port when something else listens there (pg_ctl would only say "Examine the log
        output"): another project's server, or this one's own started from another folder."""
        if port_taken(self.host, self.port):
            raise InputError(f"port {self.port} on {self.host} is in use, so PostgreSQL cannot start there: stop what "
                             f"listens on it (`ss -ltnp 'sport = :{self.port}'` names it) or give this server another port")

    def _initdb(self) -> None:
        password = secrets.token_urlsafe(24)
        secret = self.state_dir / "password"
        secret.write_text(password)
        secret.chmod(0o600)
        pwfile = self.state_dir / ".initdb-pw"
        pwfile.write_text(password)
        self._hand_over(self.state_dir)
        pwfile.chmod(0o600)
        self._hand_over(pwfile)
        try:
            self._run([self._binary("initdb"), "-D", str(self.data), "-U", USER, "--auth=scram-sha-256",
                       f"--pwfile={pwfile}", "-E", "UTF8", "--no-instructions"], "initialising the database folder")
        finally:
            pwfile.unlink(missing_ok=True)

    def _ensure_database(self) -> None:
        conn = connect(self.url().rsplit("/", 1)[0] + "/postgres")
        try:
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,))
                if cur.fetchone() is None:
                    cur.execute(f"CREATE DATABASE {DATABASE} OWNER {USER}")
        finally:
            conn.close()

    def _password(self) -> str:
        try:
            return (self.state_dir / "password").read_text().strip()
        except FileNotFoundError:
            raise InputError(f"the embedded database in {self.state_dir} was never initialised (run `ftops db start`)") from None

    def _recorded(self) -> dict:
        """The address and port it was started on (an older record has the port only)."""
        try:
            return json.loads((self.state_dir / "server.json").read_text())
        except (FileNotFoundError, ValueError):
            return {}

    @staticmethod
    def _binary(name: str) -> str:
        found = shutil.which(name) or next(iter(sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"), reverse=True)), None)
        if found is None:
            raise InputError(f"PostgreSQL's {name} was not found; install the PostgreSQL server (e.g. apt-get install postgresql) "
                             "or set FTOPS_DATABASE_URL to an existing database")
        return str(found)

    def _as_server_user(self, args: list[str]) -> list[str]:
        if os.geteuid() != 0:
            return args
        return ["runuser", "-u", "postgres", "--", *args]

    def _hand_over(self, path: Path) -> None:
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(path, user.pw_uid, user.pw_gid)

    def _run(self, args: list[str], what: str) -> None:
        proc = subprocess.run(self._as_server_user(args), capture_output=True, text=True, timeout=120, cwd=self.state_dir)
        if proc.returncode != 0:
            detail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            raise ExternalError(f"{what} failed: {detail[0]} (see {self.log})")


def listen_host() -> str:
    """The embedded server's address: ``FTOPS_DB_HOST``, else :data:`DEFAULT_HOST`."""
    return os.environ.get(HOST_ENV) or DEFAULT_HOST


def free_port(host: str | None = None) -> int:
    """A port free now on the embedded server's address (the OS picks it), for a server of one's own."""
    import socket

    with socket.socket() as sock:
        sock.bind((host or listen_host(), 0))
        return sock.getsockname()[1]


@contextmanager
def scratch_server(state_dir: Path, port: int | None = None) -> Iterator[EmbeddedPostgres]:
    """An empty embedded server of one's own in ``state_dir`` (a benchmark's), stopped and its folder removed on the
    way out, whatever happens."""
    server = EmbeddedPostgres(state_dir, port or free_port())
    server.stop()
    shutil.rmtree(server.state_dir, ignore_errors=True)
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.state_dir, ignore_errors=True)


@contextmanager
def scratch_store(state_dir: Path, port: int | None = None) -> Iterator:
    """A connection to :func:`scratch_server`'s server."""
    with scratch_server(state_dir, port) as server:
        conn = connect(server.url())
        try:
            yield conn
        finally:
            conn.close()
