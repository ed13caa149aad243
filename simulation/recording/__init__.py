"""Recording a run: the rate schedule (`schedule`), the recorder that samples every stream once per physics
step (`recorder`), ROS 1 / ROS 2 bags (`bags`, the writer; `bag_reader`, an AnyReader-based reader;
`bag_messages`), ground-truth files (`ground_truth`) and the state log (`states`).

Import the defining module: importing this package loads nothing, so reading bags does not load the
renderer.
"""
