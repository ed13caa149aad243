"""`exploration.planner: external`: a robot driven by your own node's commands (simulation.live.commands) through
its own limits and controllers, as the built-in planners drive it (simulation.exploration.drivers): a ground base's
twist is cut to its speed limits (and to forward only on a differential base) and reaches the base within its
acceleration limits; a flying base flies its position controller to each target, the fed-forward velocity cut to
its speed limit; a joint trajectory's positions are cut to the joints' ranges, and the joints move to each control
period's interpolated position at no more than their speed limits. Commands take effect at the control period they
answer; until the first, the robot holds."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from core.config import RobotConfig
from core.formats.commands import CommandEntry
from core.robot_catalogue import robot_body
from simulation.backend import Robot
from simulation.control.uav_controller import clip_norm
from simulation.exploration.drivers import BaseDriver, make_driver
from simulation.live.commands import Command, JointTrajectory, Target, Trajectory, Twist


@dataclass
class ExternalResult:
    time: float = 0.0  # s the robot was under external control
    applied: int = 0
    clipped: int = 0
    refused: int = 0
    reason: str = "time"  # time (the experiment's duration ran out) | timeout (no answer within live.timeout)

    def summary(self) -> dict:
        return {"reason": self.reason, "time": self.time, "commands_applied": self.applied,
                "commands_clipped": self.clipped, "commands_refused": self.refused}


# A command as the session hands it over: what was decoded (or the reason it was refused) and its log entry.
Inbox = Callable[[], list[tuple[Command | None, CommandEntry]]]


class ExternalControl:
    """One robot under external control from now until `end` (simulation s); `inbox` gives the commands that take
    effect at this control period (every `every` physics steps)."""

    def __init__(self, robot: Robot, config: RobotConfig, inbox: Inbox, every: int, end: float):
        self.robot, self.inbox, self.every, self.end = robot, inbox, every, end
        world = robot.world
        self.body = robot_body(config)
        self.period = every * world.timestep
        self.driver = make_driver(robot, config, self.period)
        self.result = ExternalResult()
        self._start = world.time
        self._step = 0
        self._twist = np.zeros(3)
        self._trajectory: tuple[float, Trajectory] | None = None  # (time it took effect, trajectory)
        # joint -> (time its trajectory took effect, the trajectory, the joint's place in it, where the trajectory's
        # joints were then): a new trajectory replaces the last for the joints it names
        self._joint_plans: dict[str, tuple[float, JointTrajectory, int, np.ndarray]] = {}

    def tick(self) -> bool:
        """This physics step's command; False once `end` is reached."""
        time = self.robot.world.time
        if time >= self.end - 1e-9:
            self.result.time = time - self._start
            return False
        # On the session's grid of control periods (from t = 0), and at once when control begins.
        if self._step == 0 or round(time / self.robot.world.timestep) % self.every == 0:
            for command, entry in self.inbox():
                entry.time = time  # a command sent during the bootstrap takes effect when this control begins
                if command is not None:
                    self._take(command, entry)
                self._count(entry)
            self._control(time)
        elif not isinstance(self.driver, BaseDriver):
            self.driver.update()
        self._step += 1
        return True

    def stopped(self, reason: str) -> None:
        """The run stopped early (`reason`): the account says why and when."""
        self.result.reason = reason
        self.result.time = self.robot.world.time - self._start

    def _count(self, entry: CommandEntry) -> None:
        result = self.result
        if entry.status == "refused":
            result.refused += 1
        elif entry.status in ("applied", "clipped"):
            result.applied += 1
            result.clipped += entry.status == "clipped"

    def _take(self, command: Command, entry: CommandEntry) -> None:
        """Make `command` the current one (within the limits: the entry says what was cut). A robot gets only its
        own kind's commands: the session routes the topics of its kind only (simulation.live.commands)."""
        clipped: list[str] = []
        body = self.body
        if isinstance(command, JointTrajectory):
            self._take_joints(command, entry, clipped)
        elif isinstance(command, Twist):
            linear = command.linear.copy()
            if not body.holonomic and linear[1] != 0.0:
                linear[1] = 0.0
                clipped.append("linear.y")
            if np.hypot(*linear) > body.max_speed:
                linear = clip_norm(linear, body.max_speed)
                clipped.append("linear")
            rate = math.radians(body.max_yaw_rate_deg)
            yaw_rate = float(np.clip(command.yaw_rate, -rate, rate))
            if yaw_rate != command.yaw_rate:
                clipped.append("angular.z")
            self._twist = np.array([linear[0], linear[1], yaw_rate])
            entry.values = Twist(linear, yaw_rate).values()
        else:
            points = command.points if isinstance(command, Trajectory) else [(0.0, command)]
            limited = []
            for index, (t, target) in enumerate(points):
                velocity = target.velocity
                if np.linalg.norm(velocity) > body.max_speed:
                    velocity = clip_norm(velocity, body.max_speed)
                    clipped.append(f"points.{index}.velocity" if isinstance(command, Trajectory) else "velocity")
                limited.append((t, Target(target.position, target.yaw, velocity)))
            trajectory = Trajectory(limited)
            self._trajectory = (self.robot.world.time, trajectory)
            entry.values = trajectory.values() if isinstance(command, Trajectory) else limited[0][1].values()
        entry.status, entry.clipped = ("clipped" if clipped else "applied"), clipped

    def _take_joints(self, command: JointTrajectory, entry: CommandEntry, clipped: list[str]) -> None:
        limits = self.robot.commandable_joints()
        lower = np.array([limits[name].lower for name in command.joints])
        upper = np.array([limits[name].upper for name in command.joints])
        points = []
        for index, (t, positions) in enumerate(command.points):
            inside = np.clip(positions, lower, upper)
            clipped += [f"points.{index}.{command.joints[j]}" for j in np.flatnonzero(inside != positions)]
            points.append((t, inside))
        trajectory = JointTrajectory(command.joints, points)
        states = self.robot.joint_states()
        start = np.array([states[name][0] for name in command.joints])
        for column, name in enumerate(command.joints):
            self._joint_plans[name] = (self.robot.world.time, trajectory, column, start)
        entry.values = trajectory.values()

    def _control(self, time: float) -> None:
        """This control period's command to the robot."""
        if self._joint_plans:
            self.robot.set_joint_positions({
                name: float(trajectory.at(time - since, start)[column])
                for name, (since, trajectory, column, start) in self._joint_plans.items()})
        if isinstance(self.driver, BaseDriver):
            self.robot.set_command(self.driver.controller.track(self._twist, self.period))
        elif self._trajectory is None:
            self.driver.hold()
        else:
            start, trajectory = self._trajectory
            target = trajectory.at(time - start)
            self.driver.go(target.position[:2], target.yaw, float(target.position[2]), target.velocity)
