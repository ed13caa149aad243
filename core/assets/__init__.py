"""Asset packages at run time (architecture.md §2 "Asset package"): what placement, the simulation and the
converters share, below the formats that reference packages.

One module per job: `layout` (the package's file names and default prim), `parts` (the in-memory meshes,
lights and animations), `animation` (the `animation.npz` format), `skinning` (posing an animation),
`usd_read` (meshes read back from a package's USD stage) and `ground` (terrain heights under points).
Import the defining module: importing this package loads nothing.
"""
