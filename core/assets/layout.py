"""The layout of an asset package (architecture.md §2): the file names every package holds and the default prim
of its USD stage. Converters write these files; placement, the scene composer and the simulation read them.
"""

PACKAGE_STAGE = "asset.usdc"  # the package's USD stage, which scene.usda references
PACKAGE_ROOT = "/asset"  # default prim of every package's stage
META_FILE = "meta.json"  # core.formats.asset_meta
COLLISION_FILE = "collision.stl"  # environment and object packages: the collision mesh
TRACE_FILE = "trace.stl"  # animated packages: the volume swept by the whole animation
ANIMATION_FILE = "animation.npz"  # animated packages: core.assets.animation
OCCUPANCY_FILE = "occupancy.npz"  # environment packages: core.formats.occupancy
SEMANTICS_FILE = "semantics.json"  # 3D-Front environment packages: core.formats.semantics
TEXTURES_DIR = "textures"  # image files the stage's materials reference
