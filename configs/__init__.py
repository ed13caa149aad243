"""The shipped experiment, batch and benchmark configs and the robot descriptions they name: package data, so that
an installed `grade` (editable or not) finds them through importlib.resources (pipeline/run_cli.py's
`demo_config`)."""
