"""An SMPL-family body in motion -> the package writer's `Animation`.

Skeleton: the model's joints (24 for SMPL, 52 for SMPL-H) with their names. The bind pose is the
shaped rest pose (betas applied) stood upright in the Z-up world: each bind transform is the rest
joint position with the template's Y-up -> Z-up rotation. Per frame, the root's local transform is the
data's root rotation and position (`world_rotation` brings the data to Z-up); every other joint has
its SMPL rotation and its constant rest offset from its parent. With this choice the skeleton's linear
blend skinning reproduces SMPL's skinning exactly.

Representations:
- "skeleton": a UsdSkel-skinned mesh. UsdSkel evaluates linear blend skinning only, so SMPL's
  pose-corrective blend shapes (posedirs) are NOT applied: elbows, knees and shoulders show the usual
  LBS volume loss. Use "points" where the exact SMPL surface matters.
- "points": the body mesh time-sampled per frame from the full numpy forward pass (shape and pose blend
  shapes plus skinning), i.e. exactly the SMPL surface; the skeleton is still written for joints.
"""

from __future__ import annotations

import numpy as np

from asset_converters.smpl.body_model import BodyModel, forward, rotation_matrices, shaped, sparse_skinning
from core.assets.parts import Animation, Material, PointCacheMesh, SkinnedMesh
from core.errors import InputError
from core.geometry import Y_UP_TO_Z_UP, compose, forward_kinematics, matrix_to_quat_wxyz

REPRESENTATIONS = ("skeleton", "points")
SEMANTIC_LABEL = "person"
BODY_MESH_NAME = "body"
SKIN_MATERIAL = Material("skin", base_color=(0.8, 0.6, 0.5), roughness=0.7)
TEMPLATE_TO_WORLD = Y_UP_TO_Z_UP  # the SMPL template is Y-up whatever the motion data's convention


def check_representation(representation: str) -> None:
    if representation not in REPRESENTATIONS:
        raise InputError(f"representation must be one of {list(REPRESENTATIONS)}, got {representation!r}",
                         field="representation")


def _skeleton(model: BodyModel, betas: np.ndarray | None, poses: np.ndarray, trans: np.ndarray,
              world_rotation: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(shaped vertices, rest joints, per-frame local rotations (N, J, 3, 3), local translations (N, J, 3))."""
    v_shaped, joints = shaped(model, betas)
    rotations = rotation_matrices(poses)
    n, j = rotations.shape[:2]
    local_rot = rotations.copy()
    local_rot[:, 0] = world_rotation @ rotations[:, 0]
    local_trans = np.empty((n, j, 3))
    local_trans[:, 0] = (world_rotation @ (joints[0] + trans).T).T
    local_trans[:, 1:] = joints[1:] - joints[model.parents[1:]]
    return v_shaped, joints, local_rot, local_trans


def joint_paths(model: BodyModel, betas: np.ndarray | None, poses: np.ndarray, trans: np.ndarray,
                world_rotation: np.ndarray) -> np.ndarray:
    """World positions (N, J, 3) of the joints of `body_animation` with the same arguments, without
    building any mesh: cheap enough to look at a whole long clip before choosing part of it."""
    _, _, local_rot, local_trans = _skeleton(model, betas, poses, trans, world_rotation)
    return forward_kinematics(model.parents, matrix_to_quat_wxyz(local_rot), local_trans)[:, :, :3, 3]


def body_animation(name: str, model: BodyModel, betas: np.ndarray | None, poses: np.ndarray, trans: np.ndarray,
                   fps: float, world_rotation: np.ndarray, representation: str) -> Animation:
    """The Animation of `model` posed by `poses` (N, J, 3) and `trans` (N, 3), both in the data's frame.

    World vertices are `world_rotation @ (smpl_vertices(poses, betas) + trans)`; the root joint's world
    position is `world_rotation @ (rest_pelvis + trans)`.
    """
    check_representation(representation)
    v_shaped, joints, local_rot, local_trans = _skeleton(model, betas, poses, trans, world_rotation)
    j = len(joints)
    bind = compose(np.broadcast_to(TEMPLATE_TO_WORLD, (j, 3, 3)), joints @ TEMPLATE_TO_WORLD.T)

    anim = Animation(
        name=name, fps=float(fps), joint_names=list(model.joint_names), parents=model.parents.copy(), bind_world=bind,
        local_rotations=matrix_to_quat_wxyz(local_rot), local_translations=local_trans,
        semantic_label=SEMANTIC_LABEL,
    )
    if representation == "skeleton":
        indices, weights = sparse_skinning(model.weights)
        anim.skinned.append(SkinnedMesh(BODY_MESH_NAME, v_shaped @ TEMPLATE_TO_WORLD.T, model.faces, indices, weights,
                                        SKIN_MATERIAL))
    else:
        vertices, _ = forward(model, betas, poses, trans, pose_correctives=True)
        points = vertices @ world_rotation.T
        anim.point_caches.append(PointCacheMesh(BODY_MESH_NAME, points, model.faces, SKIN_MATERIAL))
    return anim
