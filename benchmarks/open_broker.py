"""A throwaway broker with the local broker's settings less its security, for one thing only:
to measure beside the platform's broker what authentication and ACLs cost
(`make bench-relay`). It listens on free loopback ports, keeps its data in a temporary
folder and is stopped and removed when the block ends; nothing of the platform uses it.

The settings are deploy/local/kafka/server.properties as they are (plaintext listeners,
no authorizer), with only the addresses and the folder set here: the same broker as
deploy/local/infra.sh runs, less the SASL/SCRAM listener, the StandardAuthorizer and the
super user it adds.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import tempfile
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from subprocess import DEVNULL

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaError

from tests.support.infrastructure import REPO_ROOT
from tests.support.sandboxes import free_port

LIBS = REPO_ROOT / ".local" / "kafka" / "libs"
BASE_CONFIG = REPO_ROOT / "deploy" / "local" / "kafka" / "server.properties"
READY_WITHIN_S = 120.0
JVM = ["-Xms256m", "-Xmx768m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20"]  # as infra.sh's


@contextlib.asynccontextmanager
async def open_broker() -> AsyncIterator[str]:
    """Starts the broker; yields its bootstrap address."""
    if not LIBS.is_dir():
        raise SystemExit(f"{LIBS} is missing: `make infra-up` fetches the broker's jars")
    with tempfile.TemporaryDirectory(prefix="bench-open-broker-") as folder:
        port, controller = free_port(), free_port()
        config = Path(folder) / "server.properties"
        config.write_text(
            BASE_CONFIG.read_text()
            + f"\nlog.dirs={folder}/data\n"
            + f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}\n"
            + f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}\n"
            + f"controller.quorum.voters=1@127.0.0.1:{controller}\n"
        )
        cluster = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        classpath = ["-cp", f"{LIBS}/*"]
        storage = ["kafka.tools.StorageTool", "format", "-t", cluster, "-c", str(config)]
        formatting = await asyncio.create_subprocess_exec(
            "java", *classpath, *storage, stdout=DEVNULL, stderr=DEVNULL
        )
        if await formatting.wait() != 0:
            raise RuntimeError("formatting the open broker's storage failed")
        with (Path(folder) / "broker.log").open("wb") as log:
            broker = await asyncio.create_subprocess_exec(
                "java", *JVM, *classpath, "kafka.Kafka", str(config), stdout=log, stderr=log
            )
            try:
                bootstrap = f"127.0.0.1:{port}"
                await _until_it_answers(bootstrap, broker)
                yield bootstrap
            finally:
                broker.terminate()
                try:
                    await asyncio.wait_for(broker.wait(), 60)
                except TimeoutError:
                    broker.kill()
                    await broker.wait()


async def _until_it_answers(bootstrap: str, broker: asyncio.subprocess.Process) -> None:
    async with asyncio.timeout(READY_WITHIN_S):
        while True:
            if broker.returncode is not None:
                raise RuntimeError(f"the open broker exited with {broker.returncode}")
            admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=2000)
            try:
                await admin.start()
                await admin.list_topics()
                return
            except KafkaError:
                await asyncio.sleep(0.5)
            finally:
                with contextlib.suppress(KafkaError):
                    await admin.close()
