"""ROS 1 / ROS 2 bags, the recording's message stream (docs/guides/recording.md): one format in four modules, used by
the recorder that writes them and by every stage that reads them (postprocess, evaluation, the Recording reader).

`layout` (file names: `<name>.bag` or a ROS 2 folder with metadata.yaml), `topics` (topic and TF frame names),
`messages` (the message types and their builders), `writer` (BagWriter) and `reader` (AnyReader-based reading).
"""
