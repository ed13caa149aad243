"""Simulation backends (architecture.md §5): the backend protocol (simulation.backend), the embedded backend
(simulation.embedded), physics (simulation.physics), robots (simulation.robots), the ray-cast renderer
(simulation.render) and recording (simulation.recording).

Import the defining module: importing this package loads nothing, so importing a subpackage
(`simulation.physics`) loads only what it needs: not the renderer, not the backends.
"""
