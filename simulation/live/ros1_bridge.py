"""The ROS 1 side of a live run: a small rospy node, run as its own process under the Python that has rospy
(`live.ros_python`, Debian's /usr/bin/python3 by default), so GRADE's own environment (any Python 3.11+) needs no
ROS. It publishes the messages the simulator hands it, already serialised by rosbags exactly as the ROS 1 bag
stores them (same type, MD5 and canonical definition), and hands back, raw, every message it receives on the
command topics.

The pipe between them (stdin: simulator -> bridge, stdout: bridge -> simulator) carries frames: a 4-byte
little-endian length and a JSON header, then a 4-byte length and the payload bytes. This module is also what the
simulator imports to read and write those frames (`write_frame`, `read_frame`), so the protocol is spelled once.
It must run on the Pythons ROS distributions ship (3.8 for Noetic on Ubuntu 20.04): standard library and rospy only.

Simulator -> bridge: {"op": "publish", "topic"} + message bytes (a topic's first also names its "type", "md5",
"definition" and whether it is "latched");
{"op": "subscribe", "topic"}; {"op": "wait_subscriber", "topic", "timeout"}; {"op": "shutdown"}.
Bridge -> simulator: {"op": "ready", "node"}; {"op": "message", "topic", "type"} + message bytes;
{"op": "subscribed", "topic", "ok"}; {"op": "error", "message"}.
"""

import json
import struct
import sys
import threading
import time

_LENGTH = struct.Struct("<I")


def write_frame(stream, header, payload=b""):
    """One frame: its JSON `header` and `payload` bytes."""
    text = json.dumps(header).encode()
    stream.write(_LENGTH.pack(len(text)) + text + _LENGTH.pack(len(payload)))
    stream.write(payload)
    stream.flush()


def _read_exactly(stream, size):
    data = b""
    while len(data) < size:
        chunk = stream.read(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def read_frame(stream):
    """(header, payload) of the next frame; None at the end of the stream."""
    size = _read_exactly(stream, _LENGTH.size)
    if size is None:
        return None
    text = _read_exactly(stream, _LENGTH.unpack(size)[0])
    size = _read_exactly(stream, _LENGTH.size) if text is not None else None
    payload = _read_exactly(stream, _LENGTH.unpack(size)[0]) if size is not None else None
    if payload is None:
        return None
    return json.loads(text.decode()), payload


def main():
    import rospy
    from rospy.msg import AnyMsg

    inp, out = sys.stdin.buffer, sys.stdout.buffer
    lock = threading.Lock()

    def send(header, payload=b""):
        with lock:
            write_frame(out, header, payload)

    def raw_class(msgtype, md5, definition):
        # What topic_tools' relay does: a message class of the publisher's type whose body is the bytes given.
        return type("Raw", (AnyMsg,), {"_type": msgtype, "_md5sum": md5, "_full_text": definition,
                                       "_has_header": False})

    def received(message, topic):
        header = getattr(message, "_connection_header", None) or {}
        send({"op": "message", "topic": topic, "type": header.get("type", "")}, bytes(message._buff))

    rospy.init_node("grade", anonymous=True, disable_signals=True)
    send({"op": "ready", "node": rospy.get_name()})
    publishers, classes, subscribers = {}, {}, []
    while True:
        frame = read_frame(inp)
        if frame is None:
            break
        header, payload = frame
        op = header.get("op")
        if op in ("advertise", "publish") and header["topic"] not in publishers:
            topic = header["topic"]
            classes[topic] = raw_class(header["type"], header["md5"], header["definition"])
            # queue_size None: publish writes to each subscriber before returning, so nothing is dropped and
            # the simulator's order is kept on each topic.
            publishers[topic] = rospy.Publisher(topic, classes[topic], latch=bool(header.get("latched")),
                                                queue_size=None)
        if op == "advertise":
            pass
        elif op == "publish":
            message = classes[header["topic"]]()
            message._buff = payload
            publishers[header["topic"]].publish(message)
        elif op == "subscribe":
            topic = header["topic"]
            subscribers.append(rospy.Subscriber(topic, AnyMsg, received, callback_args=topic))
        elif op == "wait_subscriber":
            topic, deadline = header["topic"], time.monotonic() + float(header["timeout"])
            publisher = publishers.get(topic)
            while publisher is not None and publisher.get_num_connections() == 0 and time.monotonic() < deadline:
                time.sleep(0.01)
            send({"op": "subscribed", "topic": topic,
                  "ok": publisher is not None and publisher.get_num_connections() > 0})
        elif op == "shutdown":
            break
        else:
            send({"op": "error", "message": f"unknown op {op!r}"})
    rospy.signal_shutdown("the simulation ended")


if __name__ == "__main__":
    main()
