"""The validated project configuration, for the CLI and the daemon (pydantic; never hooks)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..core.config import DEFAULTS, JUDGE_EVENTS, config_path

__all__ = ["Config", "ConfigError", "ValidationError", "config_path", "load"]


class Config(BaseModel):
    """Keys and defaults of `.claude-session.json`; unknown keys are an error (a typo would
    otherwise silently keep the default)."""

    model_config = ConfigDict(extra="forbid")

    claim_lease_minutes: float = Field(DEFAULTS["claim_lease_minutes"], gt=0)  # type: ignore[arg-type]
    conflict_policy: Literal["warn", "deny"] = DEFAULTS["conflict_policy"]  # type: ignore[assignment]
    stale_after_minutes: float = Field(DEFAULTS["stale_after_minutes"], gt=0)  # type: ignore[arg-type]
    session_idle_minutes: float = Field(DEFAULTS["session_idle_minutes"], gt=0)  # type: ignore[arg-type]
    daemon_autostart: bool = DEFAULTS["daemon_autostart"]  # type: ignore[assignment]
    daemon_idle_exit_minutes: float = Field(DEFAULTS["daemon_idle_exit_minutes"], gt=0)  # type: ignore[arg-type]
    sweep_interval_seconds: float = Field(DEFAULTS["sweep_interval_seconds"], gt=0)  # type: ignore[arg-type]
    escalation_deny_edits: bool = DEFAULTS["escalation_deny_edits"]  # type: ignore[assignment]
    failed_path_ttl_days: float = Field(DEFAULTS["failed_path_ttl_days"], gt=0)  # type: ignore[arg-type]
    judge_events: str = DEFAULTS["judge_events"]  # type: ignore[assignment]
    judge_command: str = Field(DEFAULTS["judge_command"], min_length=1)  # type: ignore[arg-type]
    judge_timeout_seconds: float = Field(DEFAULTS["judge_timeout_seconds"], gt=0)  # type: ignore[arg-type]

    @field_validator("judge_events")
    @classmethod
    def _known_events(cls, value: str) -> str:
        unknown = {e.strip() for e in value.split(",") if e.strip()} - set(JUDGE_EVENTS)
        if unknown:
            raise ValueError(
                f"unknown judge events {sorted(unknown)}; use {', '.join(JUDGE_EVENTS)}"
            )
        return value


class ConfigError(ValueError):
    pass


def load(root: str | Path) -> Config:
    """The project's configuration; defaults when the file is absent; ConfigError when invalid."""
    path = Path(config_path(str(root)))
    if not path.exists():
        return Config()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ConfigError(f"{path}: not valid JSON: {exc}") from exc
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"{path}: {problems}") from exc
