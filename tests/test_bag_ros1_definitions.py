"""ROS 1 bags carry each type's canonical message definition (core.formats.bags.ros1_definitions), so ROS 1's own
tools take them as they take a bag recorded by `rosbag record`: Debian's `rosbag check` (ROS Noetic's rosbag, run
by the system's Python with the message packages installed) finds no type to migrate in any of them. Without
ROS: the stored texts parse, with rosbags' own parser, into the types whose MD5 they claim, and every connection
of a ROS 1 bag carries its type's canonical text, whether recorded, post-processed into a new bag or converted from
a ROS 2 bag.

The `rosbag check` test skips with the reason where ROS 1's rosbag is not installed, and fails instead under
GRADE_REQUIRE_ROS1=1 (CI, whose .ci/run installs Debian's packages).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from rosbags.rosbag1 import Reader
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from core.formats.bags.ros1_definitions import known_definitions, ros1_name
from postprocess.bag_tools import BagOptions, transform_bag

REQUIRE_ROS1 = os.environ.get("GRADE_REQUIRE_ROS1", "") == "1"
ROS1_PACKAGES = ("python3-rosbag python3-std-msgs python3-geometry-msgs python3-sensor-msgs python3-nav-msgs "
                 "python3-tf2-msgs python3-rosgraph-msgs")


@pytest.mark.parametrize("name", sorted(known_definitions()))
def test_each_stored_definition_parses_into_the_type_of_its_md5(name):
    """rosbags parses the canonical text (the type, then each dependency after its `MSG:` line) into a fresh
    typestore, and computes the same MD5 ROS 1 stored with it."""
    stored = known_definitions()[name]
    blocks = stored["definition"].split("\n" + "=" * 80 + "\n")
    store = get_typestore(Stores.EMPTY)
    types = get_types_from_msg(blocks[0], f"{name.replace('/', '/msg/')}")
    for block in blocks[1:]:
        header, _, text = block.partition("\n")
        assert header.startswith("MSG: "), header
        types |= get_types_from_msg(text, header.removeprefix("MSG: ").replace("/", "/msg/"))
    store.register(types)
    assert store.generate_msgdef(name.replace("/", "/msg/"))[1] == stored["md5sum"]


@pytest.fixture(scope="module")
def ros1_bags(tiny_run, tmp_path_factory) -> dict[str, Path]:
    """The tiny run's ROS 1 bag as recorded, post-processed (a new bag through rosbags' converter) and converted
    from the run's ROS 2 (MCAP) bag."""
    folder = tmp_path_factory.mktemp("ros1-definitions")
    bags = {"recorded": tiny_run / "bags" / "demo.bag", "processed": folder / "processed.bag",
            "from ros2": folder / "from-ros2.bag"}
    transform_bag(bags["recorded"], bags["processed"], BagOptions(rename_topics={"/clock": "/clock_copy"}))
    transform_bag(tiny_run / "bags" / "demo", bags["from ros2"], BagOptions(output_format="ros1"))
    return bags


@pytest.mark.parametrize("kind", ["recorded", "processed", "from ros2"])
def test_every_connection_of_a_ros1_bag_has_the_canonical_definition(ros1_bags, kind):
    with Reader(ros1_bags[kind]) as bag:
        connections = list(bag.connections)
    assert connections
    for connection in connections:
        stored = known_definitions()[ros1_name(connection.msgtype)]
        assert (connection.msgdef.data, connection.digest) == (stored["definition"], stored["md5sum"]), connection.topic


@pytest.mark.parametrize("kind", ["recorded", "processed", "from ros2"])
def test_rosbag_check_finds_nothing_to_migrate(ros1_bags, kind):
    rosbag = shutil.which("rosbag")
    if rosbag is None:
        reason = f"ROS 1's rosbag is not installed (on Debian: apt-get install {ROS1_PACKAGES})"
        if REQUIRE_ROS1:
            pytest.fail(f"{reason}; GRADE_REQUIRE_ROS1=1 requires it", pytrace=False)
        pytest.skip(reason)
    # The system's Python runs it, with ROS 1's message packages; nothing of the project's environment.
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp"), "LANG": "C.UTF-8"}
    result = subprocess.run([rosbag, "check", str(ros1_bags[kind])], capture_output=True, text=True, env=env,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Bag file does not need any migrations." in result.stdout, result.stdout + result.stderr
