"""Tools for the TIAGo++ Omni models, above physics: command files and driving a model through the S-curve
follower, the paper's model comparison (`drive`), fitting the S-curve network to recorded wheel velocities
(`calibration`) and the `grade robot` commands (`cli`). The models themselves are simulation.robots.
"""
