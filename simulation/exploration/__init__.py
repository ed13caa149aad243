"""Frontier-based active exploration on an occupancy map built from the robot's own depth camera."""

from simulation.exploration.drivers import BaseDriver, UavDriver, make_driver
from simulation.exploration.explorer import Explorer, explore
from simulation.exploration.follower import PathFollower
from simulation.exploration.frontiers import Frontier, frontier_clusters, frontier_mask
from simulation.exploration.goals import Goal, GoalParams, choose_goal, information_gain
from simulation.exploration.occupancy import (
    FREE,
    OCCUPIED,
    UNKNOWN,
    Grid2D,
    LogOdds,
    VoxelMap,
    depth_rays,
    project_ground,
    project_slab,
)
from simulation.exploration.params import ExplorationArea, ExplorationResult, ExplorerParams
from simulation.exploration.planner import CostMap, SearchTree, cost_map, path_is_clear, plan_path, search

__all__ = [
    "FREE", "OCCUPIED", "UNKNOWN", "BaseDriver", "CostMap", "ExplorationArea",
    "ExplorationResult", "Explorer", "ExplorerParams", "Frontier", "Goal", "GoalParams", "Grid2D", "LogOdds",
    "PathFollower", "SearchTree", "UavDriver", "VoxelMap", "choose_goal", "cost_map", "depth_rays", "explore",
    "frontier_clusters", "frontier_mask", "information_gain", "make_driver", "path_is_clear", "plan_path",
    "project_ground", "project_slab", "search",
]
