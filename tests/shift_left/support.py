"""Running Confluent's shift_left CLI (its own venv) against the local service through the TLS proxy.

The config is a copy of the sample `flink_project/config.yaml` with only what
points at the service changed: `bootstrap.servers` becomes a Confluent-shaped
host (shift_left derives its Kafka REST and Flink hosts from it; the proxy
answers them), the REST and registry URLs become the service's. Keys come
from the environment (SL_*_API_KEY/SECRET), as shift_left reads them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from shift_left_dagster.local.tls_proxy import TlsProxy
from shift_left_dagster.project.config import local_credentials
from tests.integration.support import PROJECT

BOOTSTRAP = "pkc-local.us-east-1.aws.confluent.cloud:9092"


def write_config(where: Path, service_url: str) -> Path:
    """The sample config.yaml pointed at the local service; its path."""
    config = yaml.safe_load((PROJECT / "config.yaml").read_text())
    config["kafka"]["bootstrap.servers"] = BOOTSTRAP
    config["kafka"]["rest_endpoint"] = service_url
    config["registry"]["url"] = service_url
    config["flink"]["poll_timer"] = 1  # seconds between shift_left's status polls (default 10)
    path = where / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def credentials_env() -> dict[str, str]:
    key, secret = local_credentials()
    return {f"SL_{kind}_API_{part}": value for kind in ("FLINK", "CONFLUENT_CLOUD", "KAFKA")
            for part, value in (("KEY", key), ("SECRET", secret))}


@dataclass
class ShiftLeft:
    """The `shift_left` command in a folder of its own (HOME, config, a copy of the sample pipelines)."""

    command: Path
    home: Path
    proxy: TlsProxy
    transcript: list[str] = field(default_factory=list)

    @classmethod
    def beside(cls, command: Path, home: Path, proxy: TlsProxy) -> ShiftLeft:
        """In `home`, which holds its config.yaml (write_config), with a copy of the sample pipelines."""
        shutil.copytree(PROJECT / "pipelines", home / "pipelines")
        return cls(command, home, proxy)

    @property
    def pipelines(self) -> Path:
        return self.home / "pipelines"

    def env(self) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TZ")}
        return {**keep, **self.proxy.env, **credentials_env(), "HOME": str(self.home),
                "PIPELINES": str(self.pipelines), "CONFIG_FILE": str(self.home / "config.yaml"),
                "SRC_FOLDER": str(self.home / "src"), "STAGING": str(self.home / "staging"),
                "COLUMNS": "200", "TERM": "dumb"}

    def __call__(self, *args: str, timeout: float = 300.0, check: bool = True) -> str:
        """Run `shift_left *args`; its output (stdout then stderr). Fails the test on a non-zero exit."""
        done = subprocess.run([str(self.command), *args], env=self.env(), cwd=self.home, capture_output=True,
                              text=True, timeout=timeout)
        output = done.stdout + done.stderr
        self.transcript.append(f"$ shift_left {' '.join(args)}  (exit {done.returncode})\n{output}")
        if check and done.returncode != 0:
            raise AssertionError(f"shift_left {' '.join(args)} exited {done.returncode}:\n{output[-4000:]}")
        return output
