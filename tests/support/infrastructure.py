"""Real PostgreSQL and Kafka for the test suite.

`ensure_infrastructure()` finds or starts them, in this order:

1. the endpoints in the environment, when both ``LIFTFIT_PG_ADMIN_DSN`` and
   ``KAFKA_BOOTSTRAP`` are set (e.g. after ``eval "$(deploy/local/infra.sh env)"``);
2. containers via testcontainers, when a Docker engine answers ``docker info``;
3. the Docker-free local stack, ``deploy/local/infra.sh up`` (PostgreSQL from Debian
   packages, a single-node KRaft broker from Maven Central jars).

It never skips: when nothing works it raises `InfrastructureUnavailable` naming what
failed. Tests that simulate a broker or database outage use `stop_kafka()` /
`start_kafka()` and `stop_postgres()` / `start_postgres()`, which only work against the
local stack.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import psycopg
from psycopg import conninfo, errors, sql

from servicekit.kafka_access import client_security, password_setting

REPO_ROOT = Path(__file__).resolve().parents[2]
INFRA_SCRIPT = REPO_ROOT / "deploy" / "local" / "infra.sh"
CREATE_TOPICS_SCRIPT = REPO_ROOT / "deploy" / "local" / "create_topics.py"
TOPICS_FILE = REPO_ROOT / "deploy" / "local" / "topics.txt"
SERVICE_DATABASES = ("booking", "payment", "access", "notify")

# Cold start may download the broker jars (and, on a bare machine, apt packages).
INFRA_UP_TIMEOUT_S = 1800.0
KAFKA_CONTROL_TIMEOUT_S = 180.0
PG_CONTROL_TIMEOUT_S = 120.0
DOCKER_PROBE_TIMEOUT_S = 10.0

_DB_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


class InfrastructureUnavailable(RuntimeError):
    """Neither configured, containerised nor local PostgreSQL/Kafka could be had."""


@dataclass(frozen=True)
class Infrastructure:
    pg_admin_dsn: str  # libpq URL to the 'postgres' database as a superuser
    kafka_bootstrap: str  # host:port


_lock = threading.Lock()
_cached: Infrastructure | None = None
_containers: list[Any] = []  # keeps testcontainers alive for the whole process


# The local broker's administrator (deploy/local/infra.sh): the tests' own Kafka clients and
# the services they run in-process authenticate as it; a platform the tests start runs each
# service as its own principal (tests/support/platform.py).
KAFKA_ADMIN_USER = "admin"
KAFKA_ADMIN_PASSWORD = os.environ.get("KAFKA_ADMIN_PASSWORD", "liftfit-local-kafka-admin")


def as_principal(principal: str) -> dict[str, Any]:
    """Kafka client options for one of the platform's principals, with the password the
    local run gives it (deploy/local/platform.env): to act as that service would."""
    wanted = password_setting(principal) + "="
    settings = (Path(__file__).resolve().parents[2] / "deploy/local/platform.env").read_text()
    for line in settings.splitlines():
        if line.startswith(wanted):
            env = {"KAFKA_USERNAME": principal, "KAFKA_PASSWORD": line.split("=", 1)[1]}
            return client_security(env)
    raise AssertionError(f"{wanted} is not in deploy/local/platform.env")


def ensure_infrastructure() -> Infrastructure:
    """Return reachable PostgreSQL and Kafka endpoints, starting them if needed."""
    global _cached
    with _lock:
        if _cached is None:
            _cached = _resolve()
            os.environ.setdefault("KAFKA_USERNAME", KAFKA_ADMIN_USER)
            os.environ.setdefault("KAFKA_PASSWORD", KAFKA_ADMIN_PASSWORD)
        return _cached


def _resolve() -> Infrastructure:
    failures: list[str] = []

    pg_dsn = os.environ.get("LIFTFIT_PG_ADMIN_DSN", "").strip()
    bootstrap = os.environ.get("KAFKA_BOOTSTRAP", "").strip()
    if pg_dsn and bootstrap:
        return Infrastructure(pg_admin_dsn=pg_dsn, kafka_bootstrap=bootstrap)
    if pg_dsn or bootstrap:
        failures.append(
            "environment: only one of LIFTFIT_PG_ADMIN_DSN and KAFKA_BOOTSTRAP is set "
            "(both are needed), ignoring it"
        )
    else:
        failures.append("environment: LIFTFIT_PG_ADMIN_DSN / KAFKA_BOOTSTRAP not set")

    docker_problem = _docker_unavailable_reason()
    if docker_problem is None:
        try:
            return _start_containers()
        except Exception as exc:  # any container failure: fall through to the local stack
            _stop_containers()
            failures.append(f"testcontainers: {type(exc).__name__}: {exc}")
    else:
        failures.append(f"docker: {docker_problem}")

    try:
        return _start_local()
    except InfrastructureUnavailable as exc:
        failures.append(f"deploy/local/infra.sh: {exc}")

    raise InfrastructureUnavailable(
        "no PostgreSQL/Kafka available for the tests:\n  - " + "\n  - ".join(failures)
    )


# --------------------------------------------------------------------------- docker


def _docker_unavailable_reason() -> str | None:
    docker = shutil.which("docker")
    if docker is None:
        return "no docker client on PATH"
    try:
        probe = subprocess.run(
            [docker, "info"],
            capture_output=True,
            text=True,
            timeout=DOCKER_PROBE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"'docker info' failed: {exc}"
    if probe.returncode != 0:
        return "'docker info' failed: no Docker engine answers"
    return None


def _start_containers() -> Infrastructure:
    try:
        from testcontainers.community.kafka import KafkaContainer
        from testcontainers.community.postgres import PostgresContainer
    except ImportError:
        try:
            from testcontainers.kafka import KafkaContainer
            from testcontainers.postgres import PostgresContainer
        except ImportError as exc:
            raise RuntimeError(f"testcontainers is not installed: {exc}") from exc

    postgres: Any = PostgresContainer(
        "postgres:15", username="liftfit", password="liftfit", dbname="postgres", driver=None
    ).with_command("postgres -c max_connections=300")
    _containers.append(postgres)
    postgres.start()
    pg_dsn = str(postgres.get_connection_url(driver=None))

    kafka: Any = (
        KafkaContainer("confluentinc/cp-kafka:7.6.0")
        .with_kraft()
        .with_env("KAFKA_AUTO_CREATE_TOPICS_ENABLE", "false")
        .with_env("KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS", "0")
    )
    _containers.append(kafka)
    kafka.start(timeout=120)
    bootstrap = str(kafka.get_bootstrap_server())
    atexit.register(_stop_containers)

    for name in SERVICE_DATABASES:
        _create_database_if_missing(pg_dsn, name)
    _run(
        [sys.executable, str(CREATE_TOPICS_SCRIPT), str(TOPICS_FILE)],
        timeout=KAFKA_CONTROL_TIMEOUT_S,
        env={"KAFKA_BOOTSTRAP": bootstrap},
        what="creating Kafka topics in the container",
        error=RuntimeError,
    )
    return Infrastructure(pg_admin_dsn=pg_dsn, kafka_bootstrap=bootstrap)


def _stop_containers() -> None:
    while _containers:
        container = _containers.pop()
        with contextlib.suppress(Exception):  # best effort at interpreter exit
            container.stop()


# ---------------------------------------------------------------------- local stack


def _run(
    args: list[str],
    *,
    timeout: float,
    what: str,
    env: dict[str, str] | None = None,
    error: type[RuntimeError] = InfrastructureUnavailable,
) -> str:
    """Run a command; on failure raise `error` with the command's output."""
    full_env = dict(os.environ)
    full_env.setdefault("INFRA_PYTHON", sys.executable)  # has aiokafka for topic creation
    if env:
        full_env.update(env)
    try:
        done = subprocess.run(
            args,
            cwd=REPO_ROOT,
            env=full_env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        output = _text(exc.stdout) + _text(exc.stderr)
        raise error(f"{what}: timed out after {timeout:.0f}s\n{_tail(output)}") from exc
    except OSError as exc:
        raise error(f"{what}: cannot run {args[0]}: {exc}") from exc
    if done.returncode != 0:
        raise error(f"{what}: exit code {done.returncode}\n{_tail(done.stdout + done.stderr)}")
    return done.stdout


def _text(data: str | bytes | None) -> str:
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else data


def _tail(output: str, lines: int = 60) -> str:
    return "\n".join(output.rstrip().splitlines()[-lines:])


def _infra(command: str, *, timeout: float, what: str) -> str:
    if not INFRA_SCRIPT.is_file():
        raise InfrastructureUnavailable(f"{INFRA_SCRIPT} is missing")
    bash = shutil.which("bash")
    if bash is None:
        raise InfrastructureUnavailable("bash is not installed")
    return _run([bash, str(INFRA_SCRIPT), command], timeout=timeout, what=what)


def _start_local() -> Infrastructure:
    started = time.monotonic()
    _infra("up", timeout=INFRA_UP_TIMEOUT_S, what="'infra.sh up' failed")
    exports = _parse_exports(_infra("env", timeout=30, what="'infra.sh env' failed"))
    try:
        infra = Infrastructure(
            pg_admin_dsn=exports["LIFTFIT_PG_ADMIN_DSN"],
            kafka_bootstrap=exports["KAFKA_BOOTSTRAP"],
        )
    except KeyError as exc:
        raise InfrastructureUnavailable(f"'infra.sh env' did not print {exc}") from exc
    elapsed = time.monotonic() - started
    print(f"[infrastructure] local stack ready in {elapsed:.1f}s: {infra}", file=sys.stderr)
    return infra


def _parse_exports(text: str) -> dict[str, str]:
    exports: dict[str, str] = {}
    for line in text.splitlines():
        match = re.match(r"^export ([A-Z0-9_]+)=(.*)$", line.strip())
        if match:
            exports[match.group(1)] = match.group(2).strip("'\"")
    return exports


def _local_kafka_bootstrap() -> str:
    return f"127.0.0.1:{os.environ.get('KAFKA_PORT', '19092')}"


def _require_local_kafka() -> None:
    infra = ensure_infrastructure()
    local = _local_kafka_bootstrap()
    accepted = {local, local.replace("127.0.0.1", "localhost", 1)}
    if infra.kafka_bootstrap not in accepted:
        raise RuntimeError(
            f"stop_kafka()/start_kafka() only control the local broker of deploy/local/infra.sh "
            f"({local}); the tests use Kafka at {infra.kafka_bootstrap}"
        )


@contextlib.contextmanager
def _environment(**values: str) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def stop_kafka() -> None:
    """Stop the local broker (SIGTERM, wait until the process is gone)."""
    _require_local_kafka()
    _infra("kafka-stop", timeout=KAFKA_CONTROL_TIMEOUT_S, what="'infra.sh kafka-stop' failed")


def kill_kafka() -> None:
    """SIGKILL the local broker, as a crash would, and wait until the process is gone."""
    _require_local_kafka()
    _infra("kafka-kill", timeout=KAFKA_CONTROL_TIMEOUT_S, what="'infra.sh kafka-kill' failed")


def start_kafka() -> None:
    """Start the local broker again and wait until it serves metadata requests."""
    _require_local_kafka()
    # A broker with a few thousand partitions can take a minute to come back.
    with _environment(KAFKA_START_TIMEOUT="150"):
        _infra("kafka-start", timeout=KAFKA_CONTROL_TIMEOUT_S, what="'infra.sh kafka-start' failed")


def _require_local_postgres() -> None:
    infra = ensure_infrastructure()
    port = os.environ.get("PG_PORT", "15432")
    server = urlsplit(infra.pg_admin_dsn)
    if (server.hostname, str(server.port)) not in {("127.0.0.1", port), ("localhost", port)}:
        raise RuntimeError(
            f"stop_postgres()/start_postgres() only control the local PostgreSQL of "
            f"deploy/local/infra.sh (127.0.0.1:{port}); the tests use {server.netloc}"
        )


def stop_postgres() -> None:
    """Stop the local PostgreSQL (fast shutdown: sessions are cut) and wait until it is down."""
    _require_local_postgres()
    _infra("pg-stop", timeout=PG_CONTROL_TIMEOUT_S, what="'infra.sh pg-stop' failed")


def start_postgres() -> None:
    """Start the local PostgreSQL again and wait until it accepts connections."""
    _require_local_postgres()
    _infra("pg-start", timeout=PG_CONTROL_TIMEOUT_S, what="'infra.sh pg-start' failed")


# ------------------------------------------------------------------------- databases


def _check_name(name: str) -> None:
    if not _DB_NAME.match(name):
        raise ValueError(f"invalid database name {name!r} (letters, digits, _; max 63)")


def database_url(admin_dsn: str, name: str) -> str:
    """The libpq URL of database `name` on the server of `admin_dsn` (same credentials)."""
    if admin_dsn.startswith(("postgresql://", "postgres://")):
        parts = urlsplit(admin_dsn)
        return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))
    params = conninfo.conninfo_to_dict(admin_dsn)
    user = str(params.pop("user", "") or "")
    password = str(params.pop("password", "") or "")
    host = str(params.pop("host", "") or "")
    port = str(params.pop("port", "") or "")
    params.pop("dbname", None)
    auth = quote(user, safe="") + (":" + quote(password, safe="") if password else "")
    netloc = (auth + "@" if auth else "") + quote(host, safe="") + (":" + port if port else "")
    query = "&".join(f"{k}={quote(str(v), safe='')}" for k, v in params.items() if v is not None)
    return urlunsplit(("postgresql", netloc, "/" + name, query, ""))


def _admin_execute(admin_dsn: str, statement: sql.Composed) -> None:
    # CREATE DATABASE fails transiently while another session uses template1: retry briefly.
    for attempt in range(10):
        try:
            with psycopg.connect(admin_dsn, autocommit=True, connect_timeout=10) as conn:
                conn.execute(statement)
            return
        except errors.ObjectInUse:
            if attempt == 9:
                raise
            time.sleep(0.2 * (attempt + 1))


def create_database(admin_dsn: str, name: str) -> str:
    """Create a fresh, empty database `name` (dropping a leftover one); return its URL."""
    _check_name(name)
    drop_database(admin_dsn, name)
    _admin_execute(admin_dsn, sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return database_url(admin_dsn, name)


def _create_database_if_missing(admin_dsn: str, name: str) -> None:
    _check_name(name)
    with psycopg.connect(admin_dsn, autocommit=True, connect_timeout=10) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
    if exists is None:
        _admin_execute(admin_dsn, sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def drop_database(admin_dsn: str, name: str) -> None:
    """Drop database `name` if it exists, disconnecting its sessions."""
    _check_name(name)
    _admin_execute(
        admin_dsn,
        sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)),
    )


# ----------------------------------------------------------------- migrated databases


def as_role(url: str, user: str, password: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{quote(user, safe='')}:{quote(password, safe='')}@{host}"
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def service_roles(service: str) -> tuple[str, str]:
    """The roles a service's database has where `make up` runs it (deploy/boundary.yaml,
    deploy/local/infra.sh): the migrations' owner and the rows-only runtime role. Their
    passwords are their names, as on the local machine."""
    return f"liftfit_{service}_owner", f"liftfit_{service}"


def service_database(admin_dsn: str, service: str, name: str) -> tuple[str, str]:
    """A fresh, empty database `name` confined as `service`'s own (`confine`). Returns its
    owner's and its runtime role's URLs."""
    url = create_database(admin_dsn, name)
    owner, runtime = confine(admin_dsn, service, name)
    return as_role(url, owner, owner), as_role(url, runtime, runtime)


def confine(admin_dsn: str, service: str, name: str) -> tuple[str, str]:
    """Database `name` as `make up` keeps a service's (deploy/local/infra.sh): owned by
    the service's owner role, reachable only by it and the service's runtime role. Returns
    the two roles, made when missing."""
    owner, runtime = service_roles(service)
    database = sql.Identifier(name)
    with psycopg.connect(admin_dsn, autocommit=True, connect_timeout=10) as conn:
        for role in (owner, runtime):
            _ensure_role(conn, role)
        alter = sql.SQL("ALTER DATABASE {} OWNER TO {}")
        conn.execute(alter.format(database, sql.Identifier(owner)))
        revoke = sql.SQL("REVOKE CONNECT, TEMPORARY ON DATABASE {} FROM PUBLIC")
        conn.execute(revoke.format(database))
        grant = sql.SQL("GRANT CONNECT ON DATABASE {} TO {}")
        conn.execute(grant.format(database, sql.Identifier(runtime)))
    return owner, runtime


def _ensure_role(conn: psycopg.Connection[Any], role: str) -> None:
    """A login role, neither superuser nor creator, whose password is its name."""
    if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
        return
    create = sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD {}")
    with contextlib.suppress(errors.DuplicateObject, errors.UniqueViolation):
        conn.execute(create.format(sql.Identifier(role), sql.Literal(role)))  # a race lost


class MigratedTemplates:
    """One database per service migrated by its Alembic revisions, copied for each test.

    Copying a template is much cheaper than running the migrations for every test, and the
    copy is exactly what the migrations produced, grants to the runtime role included.
    """

    def __init__(self, admin_dsn: str) -> None:
        self._admin_dsn = admin_dsn
        self._templates: dict[str, str] = {}
        self._lock = threading.Lock()

    def database(self, service: str, name: str) -> str:
        """A fresh database `name` with `service`'s schema, confined as the service's own;
        returns the URL of the service's runtime role."""
        template = self._template(service)
        _check_name(name)
        drop_database(self._admin_dsn, name)
        _admin_execute(
            self._admin_dsn,
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(template)
            ),
        )
        _, runtime = confine(self._admin_dsn, service, name)
        return as_role(database_url(self._admin_dsn, name), runtime, runtime)

    def _template(self, service: str) -> str:
        with self._lock:
            if service not in self._templates:
                from servicekit import migrations

                name = f"tmpl_{service}_{os.getpid()}"
                owner_url, runtime_url = service_database(self._admin_dsn, service, name)
                runtime = urlsplit(runtime_url).username or ""
                migrations.upgrade(service, owner_url, runtime)
                self._templates[service] = name
            return self._templates[service]

    def drop_all(self) -> None:
        for name in self._templates.values():
            with contextlib.suppress(Exception):
                drop_database(self._admin_dsn, name)
        self._templates.clear()
