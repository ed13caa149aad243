"""Source datasets -> USD asset packages (architecture.md §2).

One module per source or job: the batch job builders per dataset (`front3d`, `gso`, `mesh`, `smpl`,
`procedural`), the package writers (`environment`, `objects`, `animated`, `package`), the USD writer
(`usd_io`) and the `grade convert` command (`cli`). What later stages read of a package (its layout, the
in-memory parts, `animation.npz`, skinning, reading meshes back) is core.assets; its `meta.json` is
core.formats.asset_meta. Import the defining module: importing this package loads nothing, so the CLI
starts without trimesh and pxr.
"""
