"""The canonical ROS 1 message definitions of the types GRADE writes, as ROS 1's own tools expect them.

A ROS 1 bag stores each connection's message definition. `rosbag check`, `rosbag fix` and `rosbag play`'s
migration compare it, as text, with the installed message's `_full_text` (genmsg's: the .msg file with its
comments, then each dependency after a line of 80 `=` and `MSG: pkg/Type`). rosbags writes a shortened text
(the same MD5), which those tools take for an older definition: every type "needs migration". So the ROS 1
writer stores the canonical text, kept in ros1_definitions.json: `_full_text` and `_md5sum` of the message
classes of ROS Noetic's packages (Debian bookworm: python3-std-msgs 0.5.13, python3-geometry-msgs,
python3-sensor-msgs and python3-nav-msgs 1.13.1, python3-tf2-msgs 0.7.6, python3-rosgraph-msgs 1.11.3), read
with /usr/bin/python3:

    import json, importlib
    classes = {t: getattr(importlib.import_module(t.split("/")[0] + ".msg"), t.split("/")[1]) for t in TYPES}
    json.dump({t: {"md5sum": c._md5sum, "definition": c._full_text} for t, c in classes.items()}, ...)

dvs_msgs (the event cameras' messages of uzh-rpg's rpg_dvs_ros, which Debian does not package) are genmsg's
`compute_full_text` and `compute_md5` of that package's Event.msg and EventArray.msg, the texts its generated
classes carry.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from rosbags.typesys.store import Typestore

DEFINITIONS_FILE = Path(__file__).with_name("ros1_definitions.json")


@functools.cache
def known_definitions() -> dict[str, dict[str, str]]:
    """`pkg/Type` -> {"md5sum", "definition"} of every type kept in ros1_definitions.json."""
    return json.loads(DEFINITIONS_FILE.read_text(encoding="utf-8"))


def ros1_name(msgtype: str) -> str:
    """`pkg/Type`, ROS 1's name of rosbags' `pkg/msg/Type`."""
    package, _, name = msgtype.rpartition("/")
    return f"{package.removesuffix('/msg')}/{name}"


def has_canonical_definition(msgtype: str) -> bool:
    return ros1_name(msgtype) in known_definitions()


def canonical_definition(msgtype: str, typestore: Typestore) -> tuple[str, str]:
    """(message definition, MD5) of `msgtype` for a ROS 1 connection: the canonical text where it is known, else
    rosbags' own. The MD5 is the typestore's: a canonical text whose MD5 differs (a typestore of other message
    versions) is not used."""
    text, md5sum = typestore.generate_msgdef(msgtype)
    known = known_definitions().get(ros1_name(msgtype))
    if known is not None and known["md5sum"] == md5sum:
        return known["definition"], md5sum
    return text, md5sum
