"""`commands.json` (schema "grade.commands/1"): every command a live run took from outside (`exploration.planner:
external`, simulation.live), in the order it took effect.

    middleware, pacing, control_hz    how the run was driven (config `live`)
    commands                          one entry per message received on a command topic:
      time      simulation s at which it took effect (the control period it answered; a command refused or
                ignored is logged at the time it would have)
      robot     the robot's name (null in a one-robot run)
      topic     the ROS topic it came on; type its ROS message type
      status    applied | clipped (applied within the robot's limits: `clipped` names the fields cut) |
                refused (not applied: `reason`) | ignored (not applied: no robot listens yet, `reason`)
      values    what was applied: a base twist {vx, vy, wz} (m/s, rad/s, base frame), a UAV target {x, y, z, yaw}
                (m, rad, world) with {vx, vy, vz} fed forward, or a trajectory's points [{t, x, y, z, yaw, vx, vy, vz}]
    timeouts    answers that never came: the simulation s at which the run stopped waiting (at most one)

The state log (states.npz) holds the commands each physics step ran with, so `grade replay` repeats a live run
without ROS; this file says where they came from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from core.formats.json_model import JsonDocument, read_json_model, write_json_model

COMMANDS_FILE = "commands.json"
CommandStatus = Literal["applied", "clipped", "refused", "ignored"]


class CommandEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    time: float
    robot: str | None
    topic: str
    type: str
    status: CommandStatus
    clipped: list[str] = Field(default_factory=list)
    reason: str | None = None
    values: dict | list | None = None


class CommandLog(JsonDocument):
    KIND, MAJOR = "commands", 1

    middleware: str
    pacing: Literal["lockstep", "realtime"]
    control_hz: float
    commands: list[CommandEntry] = Field(default_factory=list)
    timeouts: list[float] = Field(default_factory=list)


def write_command_log(folder: Path, log: CommandLog) -> Path:
    return write_json_model(Path(folder) / COMMANDS_FILE, log)


def read_command_log(folder: Path) -> CommandLog:
    return read_json_model(Path(folder) / COMMANDS_FILE, CommandLog)
