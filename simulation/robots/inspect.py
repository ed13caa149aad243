"""`grade robot inspect DESCRIPTION`: what GRADE makes of a URDF or MJCF before anything is recorded with it.

The summary lists the links (the base first), the joints, the total mass, the collision footprint and the base
link chosen; the figure draws the robot's geoms (collision solid, visual outlined) from the front, the side and
the top at the zero pose, with each link's frame as red, green and blue axes (x, y, z), in base_link's frame.
"""

from __future__ import annotations

import mujoco
import numpy as np
import trimesh

from core.figures import figure_png, new_figure
from core.robot_description import Description
from simulation.robots.geom_mesh import geom_mesh, geom_pose

# (title, horizontal axis, vertical axis) of each view, in base_link's frame (x forward, y left, z up).
VIEWS = (("front (looking back along -x)", 1, 2, -1.0), ("side (looking along +y)", 0, 2, 1.0),
         ("top (looking down)", 0, 1, 1.0))


def summary(description: Description) -> str:
    """The description's links, joints, mass and footprint as lines of text."""
    lower, upper = description.lower, description.upper
    lines = [f"{description.path} ({description.format.upper()}), base link: base_link",
             f"links ({len(description.links)}): {', '.join(description.links)}",
             f"joints ({len(description.joints)}): " + (", ".join(
                 f"{j.name} ({j.type} on {j.parent})" for j in description.joints) or "none"),
             f"mass: {description.mass:.3f} kg",
             f"footprint: x {lower[0]:+.3f} .. {upper[0]:+.3f} m, y {lower[1]:+.3f} .. {upper[1]:+.3f} m "
             f"({upper[0] - lower[0]:.3f} x {upper[1] - lower[1]:.3f} m); height {upper[2] - lower[2]:.3f} m, "
             f"base_link {description.base_height:.3f} m above the floor when standing",
             "wheels: " + (", ".join(f"{w.joint} (r {w.radius:.3f} m, y {w.y:+.3f} m)" for w in description.wheels)
                           or "none")]
    return "\n".join(lines)


def figure(description: Description) -> bytes:
    """The front, side and top views of the module notes, as PNG bytes."""
    model = mujoco.MjModel.from_xml_string(description.mjcf)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    shapes = [(_posed(geom_mesh(model, g), geom_pose(data, g)), bool(model.geom_contype[g] or
                                                                     model.geom_conaffinity[g]))
              for g in range(model.ngeom)]
    size = max(float(np.max(np.subtract(description.upper, description.lower))), 0.1)
    fig = new_figure((15, 5))
    for index, (title, u, v, flip) in enumerate(VIEWS):
        ax = fig.add_subplot(1, 3, index + 1)
        for mesh, collision in shapes:
            if mesh is None:
                continue
            points = mesh.vertices[:, [u, v]] * (flip, 1.0)
            ax.add_collection(_polygons(points[mesh.faces], collision))
        for body in range(1, model.nbody):
            origin, axes = data.xpos[body], data.xmat[body].reshape(3, 3)
            for column, color in enumerate(("red", "green", "blue")):
                tip = origin + axes[:, column] * size * 0.12
                ax.plot([origin[u] * flip, tip[u] * flip], [origin[v], tip[v]], color=color, linewidth=1.2)
        ax.set_title(title)
        ax.set_aspect("equal")
        ax.autoscale_view()
        ax.set_xlabel(("-" if flip < 0 else "") + "xyz"[u] + " (m)")
        ax.set_ylabel("xyz"[v] + " (m)")
        ax.grid(True, alpha=0.3)
    fig.suptitle(f"{description.path.name}: {description.mass:.2f} kg, {len(description.links)} links "
                 "(grey: collision, outline: visual; link frames x red, y green, z blue)")
    fig.tight_layout()
    return figure_png(fig)


def _polygons(triangles: np.ndarray, collision: bool):  # noqa: ANN202 (a matplotlib PolyCollection)
    from matplotlib.collections import PolyCollection

    if collision:
        return PolyCollection(triangles, facecolors=(0.6, 0.6, 0.6, 0.25), edgecolors="none")
    return PolyCollection(triangles, facecolors="none", edgecolors=(0.1, 0.1, 0.4, 0.15), linewidths=0.3)


def _posed(mesh: trimesh.Trimesh | None, pose: np.ndarray) -> trimesh.Trimesh | None:
    return None if mesh is None else mesh.apply_transform(pose)
