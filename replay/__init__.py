"""Replay: a recorded run simulated again on its own timeline (teleport or physics), with new sensors,
lights or hidden actors, into a new recording with a deviation report (`grade replay`); or only some of its
camera frames rendered again (photoreal with Cycles) with the run's own labels (a subset replay)."""
