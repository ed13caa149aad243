"""Live runs: the run published to ROS as it records, paced by (lockstep) or with (realtime) your own node, and
robots driven by its commands (`exploration.planner: external`)."""
