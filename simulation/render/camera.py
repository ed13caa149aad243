"""Camera in the ROS optical frame (z forward, x right, y down), with a lens model (core/config/lens.py).

Pixel convention (OpenCV / ROS CameraInfo): pixel (u, v) covers [u - 0.5, u + 0.5] x [v - 0.5, v + 0.5]
and its centre is at integer coordinates, so the ray of pixel (u, v) of a pinhole passes through K^-1 [u, v, 1];
through another lens it is the model's unprojection of (u, v) (each sample's own, when supersampling).
A camera pose is the 4x4 world<-camera transform of that optical frame (acting on column vectors).
Depth is z in the optical frame and near/far are planes, except through an equidistant lens, whose rays reach 90
degrees off the axis and beyond: there depth is the range along the ray and near/far are spheres.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from core.config.lens import PINHOLE, Lens, focal_of_fov, project_directions, unproject
from core.errors import InputError

DEFAULT_NEAR = 0.01  # metres
DEFAULT_FAR = 100.0  # metres
_RAY_CACHE_SIZE = 8
_LOOK_AT_PARALLEL_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Camera:
    """Intrinsics, resolution and clipping range. Immutable, so the per-pixel ray table can be cached."""

    width: int
    height: int
    fx: float
    fy: float
    cx: float
    cy: float
    near: float = DEFAULT_NEAR
    far: float = DEFAULT_FAR
    lens: Lens = PINHOLE

    def __post_init__(self) -> None:
        if self.width < 1 or self.height < 1:
            raise InputError(f"resolution must be positive, got {self.width}x{self.height}", "camera", "resolution")
        if not (self.fx > 0 and self.fy > 0 and math.isfinite(self.fx) and math.isfinite(self.fy)):
            raise InputError(f"focal lengths must be positive, got fx={self.fx}, fy={self.fy}", "camera", "K")
        if not (math.isfinite(self.cx) and math.isfinite(self.cy)):
            raise InputError("principal point must be finite", "camera", "K")
        if not 0 < self.near < self.far:
            raise InputError(f"need 0 < near < far, got near={self.near}, far={self.far}", "camera", "near/far")

    @classmethod
    def from_intrinsics(cls, K: np.ndarray, width: int, height: int, near: float = DEFAULT_NEAR,
                        far: float = DEFAULT_FAR, lens: Lens = PINHOLE) -> Camera:
        """From a 3x3 intrinsic matrix (no skew)."""
        K = np.asarray(K, dtype=np.float64)
        if K.shape != (3, 3):
            raise InputError(f"K must be 3x3, got shape {K.shape}", "camera", "K")
        if K[0, 1] != 0 or K[1, 0] != 0 or K[2, 0] != 0 or K[2, 1] != 0 or K[2, 2] != 1:
            raise InputError("K must be [[fx, 0, cx], [0, fy, cy], [0, 0, 1]] (no skew)", "camera", "K")
        return cls(int(width), int(height), float(K[0, 0]), float(K[1, 1]), float(K[0, 2]), float(K[1, 2]),
                   float(near), float(far), lens)

    @classmethod
    def from_fov(cls, width: int, height: int, horizontal_fov_deg: float, near: float = DEFAULT_NEAR,
                 far: float = DEFAULT_FAR, lens: Lens = PINHOLE) -> Camera:
        """Square pixels, centred principal point; the FOV spans the outer pixel edges (through the lens)."""
        if lens.pinhole:  # as it always was, so pinhole cameras keep their focal length to the last bit
            if not 0 < horizontal_fov_deg < 180:
                raise InputError(f"horizontal FOV must be in (0, 180) degrees, got {horizontal_fov_deg}", "camera",
                                 "horizontal_fov")
            focal = width / (2.0 * math.tan(math.radians(horizontal_fov_deg) / 2.0))
        else:
            focal = focal_of_fov(lens, width, horizontal_fov_deg)
        return cls(int(width), int(height), focal, focal, (width - 1) / 2.0, (height - 1) / 2.0, float(near),
                   float(far), lens)

    @property
    def K(self) -> np.ndarray:
        return np.array([[self.fx, 0.0, self.cx], [0.0, self.fy, self.cy], [0.0, 0.0, 1.0]])

    @property
    def intrinsics(self) -> tuple[float, float, float, float]:
        return self.fx, self.fy, self.cx, self.cy

    @property
    def resolution(self) -> tuple[int, int]:
        """(width, height), as in replicator's camera parameters."""
        return self.width, self.height


@dataclass(frozen=True)
class CameraParams:
    """Per-frame camera record (frames.jsonl): intrinsics, resolution, world<-camera pose, clipping."""

    K: np.ndarray
    width: int
    height: int
    pose: np.ndarray
    near: float
    far: float
    lens: Lens = PINHOLE

    def as_dict(self) -> dict:
        lens = {} if self.lens.pinhole else {"model": self.lens.model, "D": list(self.lens.coefficients)}
        return {"K": self.K.tolist(), "resolution": [self.width, self.height], "pose": self.pose.tolist(),
                "near": self.near, "far": self.far, **lens}


@dataclass(frozen=True)
class Rays:
    """World-space rays, one per sample, starting on the near plane.

    `components` holds the unit directions as rows (3, N). `offset` is the distance from the camera centre
    `eye` to the origin along the direction and `dz` the direction's optical-axis component, so
    range = offset + t and depth = range * dz.
    """

    eye: np.ndarray  # (3,) float32
    components: np.ndarray  # (3, N) float32
    offset: np.ndarray  # (N,) float32
    dz: np.ndarray  # (N,) float32
    tfar: np.ndarray  # (N,) float32, distance from the origin to the far plane


@dataclass(frozen=True)
class RayTable:
    """A camera's rays before they are placed in the world: unit directions in the optical frame (3, N) and the
    per-ray distances of `Rays`, with the pose's rotation and eye as float32 (what the tracing loop turns them
    into world rays with: packets.camera_hits)."""

    local: np.ndarray  # (3, N) float32
    offset: np.ndarray
    dz: np.ndarray
    tfar: np.ndarray
    rotation: np.ndarray  # (3, 3) float32, world <- optical
    eye: np.ndarray  # (3,) float32

    def rays(self, components: np.ndarray) -> Rays:
        """The world rays, given their directions rotated into the world frame."""
        return Rays(self.eye, components, self.offset, self.dz, self.tfar)


@lru_cache(maxsize=_RAY_CACHE_SIZE)
def _camera_frame_rays(camera: Camera, samples: int) -> tuple[np.ndarray, ...]:
    """Unit directions (3, N) in the optical frame, ordered row-major over (v, u, sub_v, sub_u), the factors
    that turn the range along them into depth (their z parts; 1 where depth is the range), and the distances
    along them to the near plane (sphere) and from there to the far one."""
    sub = (np.arange(samples, dtype=np.float64) + 0.5) / samples - 0.5
    u = (np.arange(camera.width, dtype=np.float64)[:, None] + sub[None, :]).reshape(-1)
    v = (np.arange(camera.height, dtype=np.float64)[:, None] + sub[None, :]).reshape(-1)
    if not camera.lens.pinhole:
        return _lens_rays(camera, u, v, samples)
    x = (u - camera.cx) / camera.fx
    y = (v - camera.cy) / camera.fy
    # Axes (component, v, sub_v, u, sub_u) -> (component, v, u, sub_v, sub_u): a pixel's samples are contiguous.
    grid = np.empty((3, camera.height, samples, camera.width, samples))
    grid[0] = x.reshape(1, 1, camera.width, samples)
    grid[1] = y.reshape(camera.height, samples, 1, 1)
    grid[2] = 1.0
    grid = grid.transpose(0, 1, 3, 2, 4).reshape(3, -1)
    norm = np.sqrt((grid * grid).sum(axis=0))
    directions = (grid / norm).astype(np.float32)
    dz = (1.0 / norm).astype(np.float32)
    offset = np.float32(camera.near) / dz
    return _frozen(directions, dz, offset, np.float32(camera.far) / dz - offset)


def _lens_rays(camera: Camera, u: np.ndarray, v: np.ndarray, samples: int) -> tuple[np.ndarray, ...]:
    """_camera_frame_rays through a lens model: every sample position unprojected once (its own ray, not a
    pinhole image's warped)."""
    grid_u = np.broadcast_to(u.reshape(1, 1, camera.width, samples), (camera.height, samples, camera.width, samples))
    grid_v = np.broadcast_to(v.reshape(camera.height, samples, 1, 1), grid_u.shape)
    order = (0, 2, 1, 3)  # (v, sub_v, u, sub_u) -> (v, u, sub_v, sub_u): a pixel's samples are contiguous
    directions = unproject(camera.intrinsics, camera.lens, grid_u.transpose(order).reshape(-1),
                           grid_v.transpose(order).reshape(-1)).astype(np.float32)
    dz = np.ones(directions.shape[1], np.float32) if camera.lens.range_depth else directions[2].copy()
    offset = np.float32(camera.near) / dz
    return _frozen(directions, dz, offset, np.float32(camera.far) / dz - offset)


def _frozen(directions: np.ndarray, dz: np.ndarray, offset: np.ndarray, tfar: np.ndarray) -> tuple[np.ndarray, ...]:
    for array in (directions, dz, offset, tfar):
        array.setflags(write=False)
    return directions, dz, offset, tfar


def check_pose(pose: np.ndarray, field: str = "pose") -> np.ndarray:
    """A 4x4 rigid transform as float64, or InputError naming `field`."""
    pose = np.asarray(pose, dtype=np.float64)
    if pose.shape != (4, 4) or not np.all(np.isfinite(pose)):
        raise InputError(f"must be a finite 4x4 matrix, got shape {pose.shape}", "camera", field)
    return pose


def linear_map(points: np.ndarray, matrix: np.ndarray, offset: np.ndarray | None = None) -> np.ndarray:
    """matrix @ points (+ offset) for points given as rows (3, N), in the points' dtype.

    Row by row on purpose: (N, 3) layouts make numpy loop over 3 elements at a time, and (3, 3)
    matmuls of big arrays go to multi-threaded BLAS, which fights Embree's ray threads for the cores.
    """
    dtype = points.dtype
    out = np.empty((3, points.shape[1]), dtype=dtype)
    for row in range(3):
        column = out[row]
        np.multiply(points[0], dtype.type(matrix[row, 0]), out=column)
        column += points[1] * dtype.type(matrix[row, 1])
        column += points[2] * dtype.type(matrix[row, 2])
        if offset is not None:
            column += dtype.type(offset[row])
    return out


def ray_table(camera: Camera, pose: np.ndarray, samples: int = 1, pixels: tuple[int, int] | None = None) -> RayTable:
    """The rays of every pixel (samples x samples per pixel on a regular sub-pixel grid), or of the flat
    (row-major) pixel range [first, last) given as `pixels`, from a camera at `pose`."""
    pose = check_pose(pose)
    local, dz, offset, tfar = _camera_frame_rays(camera, samples)
    if pixels is not None:
        rays = slice(pixels[0] * samples * samples, pixels[1] * samples * samples)
        local, dz, offset, tfar = local[:, rays], dz[rays], offset[rays], tfar[rays]
    return RayTable(local, offset, dz, tfar, pose[:3, :3].astype(np.float32), pose[:3, 3].astype(np.float32))


def world_to_camera(pose: np.ndarray, points: np.ndarray) -> np.ndarray:
    """World points given as rows (3, N) in the optical frame of a camera at `pose`, as (3, N) float64."""
    rotation, translation = pose[:3, :3], pose[:3, 3]
    return linear_map(np.asarray(points, dtype=np.float64), rotation.T, -rotation.T @ translation)


def project(camera: Camera, points_camera: np.ndarray) -> np.ndarray:
    """Pixel coordinates (2, N) of optical-frame points (3, N) through the camera's lens; callers handle points
    with z <= 0 (or, through an equidistant lens, nearer than `near`: `depth_of`)."""
    if not camera.lens.pinhole:
        return project_directions(camera.intrinsics, camera.lens, points_camera)
    return np.stack([camera.fx * points_camera[0] / points_camera[2] + camera.cx,
                     camera.fy * points_camera[1] / points_camera[2] + camera.cy])


def depth_of(camera: Camera, points_camera: np.ndarray) -> np.ndarray:
    """The depth (N,) of optical-frame points (3, N) as the camera measures it: z, or the range for range depth."""
    if camera.lens.range_depth:
        return np.sqrt((points_camera * points_camera).sum(axis=0))
    return points_camera[2]


def look_at(eye: np.ndarray, target: np.ndarray, up: tuple[float, float, float] = (0.0, 0.0, 1.0)) -> np.ndarray:
    """World<-camera pose of an optical frame at `eye` looking at `target` with image-up along `up`."""
    eye = np.asarray(eye, dtype=np.float64)
    forward = np.asarray(target, dtype=np.float64) - eye
    forward /= np.linalg.norm(forward)
    right = np.cross(forward, np.asarray(up, dtype=np.float64))
    if np.linalg.norm(right) < _LOOK_AT_PARALLEL_TOLERANCE:
        raise InputError("viewing direction is parallel to the up vector", "camera", "look_at")
    right /= np.linalg.norm(right)
    down = np.cross(forward, right)
    pose = np.eye(4)
    pose[:3, 0], pose[:3, 1], pose[:3, 2], pose[:3, 3] = right, down, forward, eye
    return pose
