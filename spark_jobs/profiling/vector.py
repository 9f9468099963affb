"""The checkpoint vector (Spark's checkpoint configuration) and checkpoint lineages (what a restart keeps)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ft_core.errors import InputError

STATE_STORE_PROVIDERS = {
    "hdfs": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
    "rocksdb": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
}
# The settings a checkpoint pins in its offset log: a restart keeps the checkpoint's values.
PINNED_SETTINGS = {
    "shuffle_partitions": "spark.sql.shuffle.partitions",
    "state_store": "spark.sql.streaming.stateStore.providerClass",
    "multiple_watermark_policy": "spark.sql.streaming.multipleWatermarkPolicy",
}
CHANGELOG_CONF = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"


class CheckpointVector(BaseModel):
    """Spark's checkpoint configuration: the trigger interval first, then what changes commit and
    restore costs, and the settings a checkpoint pins (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    trigger_s: float = Field(gt=0, description="micro-batch trigger (processingTime) = checkpoint interval")
    min_deltas_for_snapshot: int | None = Field(default=None, ge=1, description="state snapshot every N deltas "
                                                "(None: Spark's default, 10)")
    shuffle_partitions: int = Field(default=2, ge=1, description="pinned by the checkpoint")
    state_store: Literal["hdfs", "rocksdb"] = Field(default="hdfs", description="pinned by the checkpoint")
    changelog_checkpointing: bool = Field(default=False, description="RocksDB changelog checkpointing")
    multiple_watermark_policy: Literal["min", "max"] = Field(default="min", description="pinned by the checkpoint")

    @model_validator(mode="after")
    def _changelog_needs_rocksdb(self):
        if self.changelog_checkpointing and self.state_store != "rocksdb":
            raise ValueError("changelog checkpointing needs the rocksdb state store")
        return self

    def pinned(self) -> dict[str, str]:
        """The values this vector gives the settings a checkpoint pins, by Spark conf key."""
        return {PINNED_SETTINGS["shuffle_partitions"]: str(self.shuffle_partitions),
                PINNED_SETTINGS["state_store"]: STATE_STORE_PROVIDERS[self.state_store],
                PINNED_SETTINGS["multiple_watermark_policy"]: self.multiple_watermark_policy}

    def spark_confs(self) -> list[str]:
        """``key=value`` Spark confs beyond what ``run_workload`` takes as options."""
        confs = [f"{PINNED_SETTINGS['state_store']}={STATE_STORE_PROVIDERS[self.state_store]}",
                 f"{PINNED_SETTINGS['multiple_watermark_policy']}={self.multiple_watermark_policy}"]
        if self.state_store == "rocksdb":
            confs.append(f"{CHANGELOG_CONF}={str(self.changelog_checkpointing).lower()}")
        return confs

    def describe(self) -> str:
        snapshot = self.min_deltas_for_snapshot or "Spark's default (10)"
        changelog = ", changelog checkpointing" if self.changelog_checkpointing else ""
        return (f"minDeltasForSnapshot {snapshot}, {self.state_store} state store{changelog}, "
                f"{self.shuffle_partitions} shuffle partitions, multiple-watermark policy {self.multiple_watermark_policy}")


class SettingChange(BaseModel):
    setting: str
    current: str | None
    proposed: str


class LineageCheck(BaseModel):
    """Whether a checkpoint vector can be applied by restarting on an existing checkpoint."""

    needs_new_lineage: bool
    changes: list[SettingChange] = Field(description="pinned settings the plan changes")
    applied_on_restart: list[str] = Field(description="settings a restart on the same checkpoint applies")
    message: str


def pinned_settings(checkpoint: Path) -> dict[str, str]:
    """The pinned settings recorded in a checkpoint's latest offset-log entry (``offsets/<n>``, line 2)."""
    folder = Path(checkpoint) / "offsets"
    entries = sorted((p for p in folder.glob("[0-9]*") if p.name.isdigit()), key=lambda p: int(p.name)) \
        if folder.is_dir() else []
    if not entries:
        raise InputError(f"checkpoint {str(checkpoint)!r}: no offset log (offsets/<n>); is it a streaming checkpoint?")
    lines = entries[-1].read_text().splitlines()
    try:
        conf = json.loads(lines[1]).get("conf", {})
    except (IndexError, json.JSONDecodeError):
        raise InputError(f"checkpoint {str(checkpoint)!r}: {entries[-1].name} is not an offset-log entry") from None
    return {key: conf[key] for key in PINNED_SETTINGS.values() if key in conf}


def lineage_check(proposed: CheckpointVector, current: dict[str, str]) -> LineageCheck:
    """Compare a vector with the pinned settings of a lineage (a checkpoint's, or another vector's
    :meth:`CheckpointVector.pinned`)."""
    changes = [SettingChange(setting=key, current=current.get(key), proposed=value)
               for key, value in proposed.pinned().items() if current.get(key) != value]
    restart = ["trigger interval", "spark.sql.streaming.stateStore.minDeltasForSnapshot"]
    if changes:
        names = ", ".join(f"{c.setting} {c.current} -> {c.proposed}" for c in changes)
        message = (f"needs a new checkpoint lineage: {names} is pinned by the checkpoint (a restart keeps the old "
                   "value); start the job on a new checkpoint folder and replay its input")
    else:
        message = "restart on the existing checkpoint: the trigger interval and minDeltasForSnapshot apply on restart"
    return LineageCheck(needs_new_lineage=bool(changes), changes=changes, applied_on_restart=restart, message=message)


