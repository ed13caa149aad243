"""Live publishing (`live`, `grade generate --live ros1`): the run as a ROS 1 node, its topics published as they
are recorded and, with `exploration.planner: external`, its robots driven by your own node's commands
(docs/guides/live-ros.md: the topics, the commands and the lockstep handshake)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from core.config.base import PositiveFloat, Strict

# The longest wait for the external node accepted, s: a day (a node stopped in a debugger still times out).
MAX_LIVE_TIMEOUT_S = 86_400.0


class LiveConfig(Strict):
    middleware: Literal["none", "ros1", "ros2"] = Field(
        "none", description="none: record only; ros1: also publish every recorded topic to a ROS 1 master "
                            "(ROS_MASTER_URI) and take commands there; ros2: the same as ROS 2 topics on DDS "
                            "(domain ROS_DOMAIN_ID; the live extra)")
    pacing: Literal["lockstep", "realtime"] = Field(
        "lockstep", description="lockstep: simulated time advances one control period only after your node has "
                                "answered it on /grade/step_done (same node, same seed: the same run); realtime: "
                                "paced to the wall clock times rate_factor, commands applied as they come")
    control_hz: PositiveFloat = Field(30.0, description="control periods per simulated second: the step requests "
                                                        "of lockstep, the command updates of both pacings; must "
                                                        "divide simulation.physics_hz")
    rate_factor: PositiveFloat = Field(1.0, description="realtime pacing: simulated seconds per wall-clock second")
    timeout: Annotated[float, Field(gt=0, le=MAX_LIVE_TIMEOUT_S)] = Field(
        30.0, description="s of wall clock to wait for your node in lockstep: for its first subscription (past it "
                          "the run fails: start your node), then for each answer (past it the run stops where it "
                          "is, and is saved complete)")
    ros_python: Path = Field(Path("/usr/bin/python3"), description="the Python that has rospy (Debian's "
                                                                   "python3-rospy, a ROS distribution's)")

