"""A local Airflow for the demo and the end-to-end tests: api-server, scheduler, dag-processor, triggerer.

Why not ``airflow standalone``: it stops its children only on SIGINT, and a background job started from
a non-interactive shell ignores SIGINT, so a scripted stop leaves an orphaned scheduler behind
(stack notes, section 7). Each component is started here in its own session with its pid recorded,
and stopped by signalling its whole process group (the LocalExecutor's workers included).

Configuration: ``AIRFLOW_HOME`` under the project's state folder (SQLite metadata), a dags folder in it
with the thin files of ``ftops dags install`` (as users get the DAGs), parallelism 4 (2 cores), the SimpleAuthManager with one ``admin`` user whose generated
password stays in ``$AIRFLOW_HOME/simple_auth_manager_passwords.json.generated``. Connections come in as
``AIRFLOW_CONN_*`` environment variables of the processes (``extra_env``), never written to a file.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import httpx
from tenacity import retry, retry_if_exception_type, retry_if_result, stop_after_attempt, wait_fixed

from ft_core.errors import ExternalError, InputError
from ft_core.local_ports import port_taken
from ftops_provider.dag_files import install_dag_files
from spark_jobs.runtime.processes import own_group_alive, owns_group, same_process, signal_group, signal_own_group, start_time
from spark_jobs.runtime.waiting import wait_for, wait_while

COMPONENTS = ("api-server", "scheduler", "dag-processor", "triggerer")
# Pools the ftops DAGs use: profiling copies compete for the machine's cores, so one runs at a time.
POOLS = (("ftops_profiling", 1, "ftops_checkpoint_tuning: profiling copies running at once"),)


@dataclass
class LocalAirflow:
    """The Airflow processes of one ``AIRFLOW_HOME`` (state in ``<home>/ftops-processes.json``)."""

    home: Path
    port: int = 8080
    dags_folder: Path | None = None  # default <home>/dags, filled with the thin DAG files on every start
    parallelism: int = 4

    @property
    def dags(self) -> Path:
        return self.dags_folder or self.home / "dags"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def _state_file(self) -> Path:
        return self.home / "ftops-processes.json"

    def env(self, extra_env: dict[str, str] | None = None) -> dict[str, str]:
        """The environment of every Airflow process (and of ``airflow`` CLI calls for this home)."""
        bin_dir = str(Path(sys.executable).parent)
        # A real Airflow, never unit-test mode (a test session may have set it in this environment).
        inherited = {k: v for k, v in os.environ.items() if k != "AIRFLOW__CORE__UNIT_TEST_MODE"}
        return {
            **inherited,
            "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}",  # spark-submit and airflow from the venv
            "AIRFLOW_HOME": str(self.home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(self.dags),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__PARALLELISM": str(self.parallelism),
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.url}/execution/",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin",
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "30",
            "SPARK_LOCAL_IP": "127.0.0.1",
            **(extra_env or {}),
        }

    # -- facts -----------------------------------------------------------------------------
    def records(self) -> dict[str, tuple[int, float | None]]:
        """Component -> (pid, start time) as started (a record of an older version has no start time)."""
        try:
            doc = json.loads(self._state_file.read_text())
        except (FileNotFoundError, ValueError):
            return {}
        return {k: (int(v), None) if isinstance(v, int) else (int(v["pid"]), v.get("started")) for k, v in doc.items()}

    def pids(self) -> dict[str, int]:
        return {name: pid for name, (pid, _) in self.records().items()}

    def alive(self) -> dict[str, bool]:
        """Component -> whether it runs (its pid given to another process since does not count)."""
        return {name: same_process(pid, started) for name, (pid, started) in self.records().items()}

    def health(self) -> dict[str, str]:
        """Component statuses from ``/api/v2/monitor/health`` ({} when the api-server does not answer)."""
        try:
            doc = httpx.get(f"{self.url}/api/v2/monitor/health", timeout=5).json()
        except (httpx.HTTPError, ValueError):
            return {}
        return {name: (info or {}).get("status", "unknown") for name, info in doc.items() if isinstance(info, dict)}

    def admin_password(self) -> str:
        path = self.home / "simple_auth_manager_passwords.json.generated"
        try:
            return json.loads(path.read_text())["admin"]
        except (FileNotFoundError, KeyError, ValueError):
            raise ExternalError(f"no generated admin password in {path} (has the api-server started?)") from None

    def token(self) -> str:
        """A JWT for the admin user (``POST /auth/token``), for API calls and the plugin's pages."""
        body = {"username": "admin", "password": self.admin_password()}
        try:
            resp = self._request("POST", f"{self.url}/auth/token", json=body, timeout=30)
            resp.raise_for_status()
            return resp.json()["access_token"]
        except (httpx.HTTPError, KeyError, ValueError) as exc:
            raise ExternalError(f"could not get an Airflow token from {self.url}/auth/token: {exc}") from None

    # -- actions ---------------------------------------------------------------------------
    def up(self, extra_env: dict[str, str] | None = None, timeout_s: float = 240, progress=lambda _: None) -> None:
        """Migrate the metadata database, start the four components and wait until all are healthy."""
        if any(self.alive().values()):
            raise InputError(f"Airflow in {self.home} is already running (pids {self.pids()}); stop it first")
        _port_free(self.port)
        self.home.mkdir(parents=True, exist_ok=True)
        env = self.env(extra_env)
        progress("migrating the Airflow metadata database")
        proc = subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], env=env, capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            raise ExternalError(f"airflow db migrate failed: {(proc.stderr or proc.stdout).strip().splitlines()[-1:]}")
        for name, slots, text in POOLS:
            proc = subprocess.run([sys.executable, "-m", "airflow", "pools", "set", name, str(slots), text], env=env,
                                  capture_output=True, text=True, timeout=120)
            if proc.returncode != 0:
                raise ExternalError(f"airflow pools set {name} failed: {(proc.stderr or proc.stdout).strip()[-300:]}")
        self._start(COMPONENTS, env)
        progress(f"waiting for {', '.join(COMPONENTS)} to be healthy at {self.url}")
        self._wait_healthy(timeout_s)

    def crash(self, names: tuple[str, ...]) -> None:
        """SIGKILL the named components' process groups, as a machine or OOM kill would (fault tests)."""
        records = self.records()
        unknown = set(names) - set(records)
        if unknown:
            raise InputError(f"no running {', '.join(sorted(unknown))} in {self.home}")
        for name in names:
            signal_own_group(*records[name], signal.SIGKILL)
        wait_while(lambda: any(same_process(*records[n]) for n in names), timeout_s=30)

    def restart(self, names: tuple[str, ...], extra_env: dict[str, str] | None = None, timeout_s: float = 240) -> None:
        """Start the named components again (after :meth:`crash` or a stop) and wait until all are healthy."""
        still = [n for n in names if self.alive().get(n)]
        if still:
            raise InputError(f"{', '.join(still)} still running in {self.home}; stop or crash them first")
        self._start(names, self.env(extra_env))
        self._wait_healthy(timeout_s)

    def _start(self, names: tuple[str, ...], env: dict[str, str]) -> None:
        """Each component in a session of its own (so a stop reaches its whole process group)."""
        records = self.records()
        logs = self.home / "logs"
        logs.mkdir(exist_ok=True)
        if self.dags_folder is None:  # ours: refreshed, so an upgraded ftops brings its new DAGs along
            self.dags.mkdir(parents=True, exist_ok=True)
            install_dag_files(self.dags, force=True)
        for name in names:
            args = [sys.executable, "-m", "airflow", name] + (["--port", str(self.port)] if name == "api-server" else [])
            with open(logs / f"{name}.log", "ab") as log:
                pid = subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       start_new_session=True, cwd=self.home).pid
            records[name] = (pid, start_time(pid))
        self._state_file.write_text(json.dumps({n: {"pid": pid, "started": t} for n, (pid, t) in records.items()}))

    # -- REST ------------------------------------------------------------------------------
    # A loaded machine's api-server can miss a timeout now and then, and its SQLite metadata database answers
    # "Database error" (HTTP 500) while another component holds the write lock: reads, the token, idempotent
    # writes (PATCH) and a trigger naming its own run id are asked again; the last answer stands.
    @staticmethod
    @retry(retry=retry_if_exception_type(httpx.TimeoutException) | retry_if_result(lambda r: r.status_code >= 500),
           stop=stop_after_attempt(4), wait=wait_fixed(3), reraise=True, retry_error_callback=lambda s: s.outcome.result())
    def _request(method: str, url: str, **kwargs) -> httpx.Response:
        return httpx.request(method, url, **kwargs)

    def api(self, method: str, path: str, body: dict | None = None, token: str | None = None) -> dict:
        """One call of Airflow's REST API as the admin user; an error names the call and the status."""
        resp = self._send(method, path, body, token, repeat=method in ("GET", "PATCH"))  # a POST is not repeated blindly
        return self._answer(method, path, resp)

    def _send(self, method: str, path: str, body: dict | None, token: str | None, repeat: bool) -> httpx.Response:
        try:
            send = self._request if repeat else httpx.request
            return send(method, f"{self.url}{path}", json=body, timeout=30,
                        headers={"Authorization": f"Bearer {token or self.token()}"})
        except httpx.HTTPError as exc:
            raise ExternalError(f"Airflow API {method} {path}: {exc}") from None

    @staticmethod
    def _answer(method: str, path: str, resp: httpx.Response) -> dict:
        if resp.is_error:
            raise ExternalError(f"Airflow API {method} {path}: HTTP {resp.status_code} {resp.text[:300]!r}")
        return resp.json()

    def trigger(self, dag_id: str, conf: dict | None = None, parse_timeout_s: float = 180) -> str:
        """Wait until the dag-processor has parsed ``dag_id``, unpause it, trigger a run; returns its run id."""
        token = self.token()
        wait_for(lambda: self._dag_parsed(dag_id, token), timeout_s=parse_timeout_s, interval_s=3,
                 what=f"DAG {dag_id} to be parsed (check /api/v2/importErrors)")
        self.api("PATCH", f"/api/v2/dags/{dag_id}", {"is_paused": False}, token)
        return self._post_run(dag_id, conf or {}, token)

    def _post_run(self, dag_id: str, conf: dict, token: str) -> str:
        """POST a run under a run id of our own, so a "Database error" (HTTP 500) or a timeout can be asked again
        (the soak of 2026-12-02 13:54 lost its trigger to one: Airflow's audit-log insert lost SQLite's write lock).
        A conflict (409) on that id is an earlier try's run, committed before its answer was lost."""
        run_id, path = f"manual__{datetime.now(timezone.utc).isoformat()}", f"/api/v2/dags/{dag_id}/dagRuns"
        resp = self._send("POST", path, {"dag_run_id": run_id, "logical_date": None, "conf": conf}, token, repeat=True)
        if resp.status_code == 409 and self.dag_run(dag_id, run_id).get("conf") == conf:
            return run_id
        return self._answer("POST", path, resp)["dag_run_id"]

    def run_dag(self, dag_id: str, conf: dict | None = None, timeout_s: float = 900,
                progress=lambda _m: None) -> dict:
        """Trigger a run of ``dag_id`` (:meth:`trigger`) and wait until it ends; returns the run. Each change of its
        state, and while it runs of the tasks at work (running or deferred), goes to ``progress``."""
        run_id = self.trigger(dag_id, conf)
        progress(f"{dag_id}: run {run_id} triggered")
        state, said = None, None

        def finished() -> dict | None:
            nonlocal state, said
            run = self.dag_run(dag_id, run_id)
            state = run["state"]
            line = f"{dag_id}: {state}" + (self._at_work(dag_id, run_id) if state == "running" else "")
            if line != said:
                said = line
                progress(line)
            return run if state in ("success", "failed") else None

        return wait_for(finished, timeout_s=timeout_s, interval_s=3, what=lambda: f"{dag_id} run {run_id} to finish (state {state})")

    def _at_work(self, dag_id: str, run_id: str) -> str:
        """`` (task_a, task_b deferred)``: the run's tasks running or deferred now; empty when none is."""
        try:
            tis = self.task_instances(dag_id, run_id)
        except ExternalError:  # the next poll asks again
            return ""
        busy = sorted(f"{task}{' deferred' if ti['state'] == 'deferred' else ''}" for task, ti in tis.items()
                      if ti["state"] in ("running", "deferred"))
        return f" ({', '.join(busy)})" if busy else ""

    def _dag_parsed(self, dag_id: str, token: str) -> bool:
        try:
            self.api("GET", f"/api/v2/dags/{dag_id}", token=token)
        except ExternalError:
            return False
        return True

    def dag_run(self, dag_id: str, run_id: str) -> dict:
        return self.api("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}")

    def task_instances(self, dag_id: str, run_id: str) -> dict[str, dict]:
        """The run's task instances by task id (state, try_number, ...)."""
        doc = self.api("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances?limit=100")
        return {ti["task_id"]: ti for ti in doc["task_instances"]}

    def failed_task_logs(self, dag_id: str, run_id: str, lines: int = 15) -> str:
        """The last ``lines`` of the newest attempt's log of each task of the run that failed or waits for a
        retry (what explains a failed run in a test's or the demo's message); empty when none did."""
        parts = []
        for task in self._tasks_in(dag_id, run_id, ("failed", "up_for_retry")):
            attempts = self._attempt_logs(dag_id, run_id, task)
            tail = attempts[-1].read_text(errors="replace").splitlines()[-lines:] if attempts else ["(no log file)"]
            parts.append(f"--- {task} ({attempts[-1].name if attempts else '-'}):\n" + "\n".join(tail))
        return "\n".join(parts)

    def task_errors(self, dag_id: str, run_id: str) -> dict[str, str]:
        """Each failed task of the run and the error that failed its newest attempt (from the task log's
        structured lines: ``error_detail``); a task whose log names none is left out."""
        return self._log_events(dag_id, run_id, ("failed",), lambda e: next(
            (f"{d['exc_value']}" for d in e.get("error_detail") or [] if d.get("exc_value")), None))

    def skip_reasons(self, dag_id: str, run_id: str) -> dict[str, str]:
        """Each skipped task of the run and why it was skipped (its log's ``Skipping task.`` line); a task skipped
        by its trigger rule (it never ran) has no log and is left out."""
        return self._log_events(dag_id, run_id, ("skipped",),
                                lambda e: e.get("reason") if e.get("event") == "Skipping task." else None)

    def _log_events(self, dag_id: str, run_id: str, states: tuple[str, ...], pick) -> dict[str, str]:
        out = {}
        for task in self._tasks_in(dag_id, run_id, states):
            for log in self._attempt_logs(dag_id, run_id, task)[-1:]:
                for line in log.read_text(errors="replace").splitlines():
                    try:
                        found = pick(json.loads(line))
                    except (ValueError, AttributeError, TypeError):
                        continue
                    if found:
                        out[task] = found
        return out

    def _tasks_in(self, dag_id: str, run_id: str, states: tuple[str, ...]) -> list[str]:
        return [t for t, ti in self.task_instances(dag_id, run_id).items() if ti["state"] in states]

    def _attempt_logs(self, dag_id: str, run_id: str, task: str) -> list[Path]:
        # a mapped task's attempts are one level down, in map_index=N (the fleet DAGs map over jobs)
        folder = self.home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}" / f"task_id={task}"
        # a deferred attempt's trigger writes attempt=N.log.trigger.M.log beside it: the attempt's own log is the one
        attempts = [p for p in folder.rglob("attempt=*.log") if re.fullmatch(r"attempt=\d+\.log", p.name)]
        return sorted(attempts, key=lambda p: int(p.name[len("attempt="):-len(".log")]))

    def down(self, timeout_s: float = 60) -> list[str]:
        """SIGTERM each component's process group, SIGKILL what is left after ``timeout_s``, and return
        once every process of every group is gone (a SIGKILLed process takes a moment to exit)."""
        ours = {name: rec for name, rec in self.records().items() if owns_group(*rec)}  # not a reused pid

        def any_alive() -> bool:  # checked each time: a pid freed during the wait may have been reused
            return any(own_group_alive(*rec) for rec in ours.values())

        for pid, _ in ours.values():
            signal_group(pid, signal.SIGTERM)
        wait_while(any_alive, timeout_s=timeout_s, interval_s=0.5)
        for pid, started in ours.values():
            if own_group_alive(pid, started):  # a group gone: its pid may name another process by now
                signal_group(pid, signal.SIGKILL)
        wait_while(any_alive, timeout_s=30, interval_s=0.2)
        if any_alive():
            raise ExternalError(f"Airflow processes of {sorted(ours)} outlived SIGKILL for 30 s (see ps -g)")
        self._state_file.unlink(missing_ok=True)
        return sorted(ours)

    def _wait_healthy(self, timeout_s: float) -> None:
        wanted = {"metadatabase", "scheduler", "triggerer", "dag_processor"}
        health: dict[str, str] = {}

        def healthy() -> bool:
            nonlocal health
            dead = [n for n, ok in self.alive().items() if not ok]
            if dead:
                raise ExternalError(f"Airflow {', '.join(dead)} exited during start-up (see {self.home / 'logs'})")
            health = self.health()
            return wanted <= {k for k, v in health.items() if v == "healthy"}

        try:
            wait_for(healthy, timeout_s=timeout_s, interval_s=2,
                     what=lambda: f"Airflow to become healthy (last health: {health or 'no answer'}; "
                                  f"logs in {self.home / 'logs'})")
        except ExternalError as exc:
            try:
                self.down()
            except ExternalError as stop:  # both said: the start-up's error first
                raise ExternalError(f"{exc}; stopping what started failed too: {stop}") from None
            raise





def _port_free(port: int) -> None:
    if port_taken("127.0.0.1", port):
        raise InputError(f"port {port} is in use on 127.0.0.1; stop what listens there or choose another port")
