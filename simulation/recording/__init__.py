"""Recording a run: ROS bags, ground truth, the state log and the loop that drives them."""
