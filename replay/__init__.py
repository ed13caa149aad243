"""Replay: a recorded run simulated again on its own timeline (teleport or physics), with new sensors,
lights or hidden actors, into a new recording with a deviation report (`grade replay`)."""
