"""SMPL / SMPL-H body models: finding the user's licensed files, loading and checking them, and the
numpy forward pass (shape blend shapes, joint regression, pose blend shapes, linear blend skinning).

The model files are never downloaded (their licence forbids redistribution): the user registers at
smpl.is.tue.mpg.de (SMPL) or mano.is.tue.mpg.de (SMPL-H) and points `--body-model DIR` at the folder.
The forward pass follows smplx's `lbs()` step by step, so vertices agree with smplx to float64
round-off; a test compares the two when smplx is installed.
"""

from __future__ import annotations

import fnmatch
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from asset_converters.smpl.model_pickle import load_model_pickle, load_pickled_npy
from core.errors import InputError
from core.progress import get_logger

log = get_logger("convert.smpl")

SMPL_JOINT_NAMES = [
    "pelvis", "left_hip", "right_hip", "spine1", "left_knee", "right_knee", "spine2", "left_ankle",
    "right_ankle", "spine3", "left_foot", "right_foot", "neck", "left_collar", "right_collar", "head",
    "left_shoulder", "right_shoulder", "left_elbow", "right_elbow", "left_wrist", "right_wrist",
    "left_hand", "right_hand",
]
BODY_JOINTS = 22  # pelvis .. right_wrist: shared by SMPL, SMPL-H and SMPL-X
_FINGERS = [f"{finger}{i}" for finger in ("index", "middle", "pinky", "ring", "thumb") for i in (1, 2, 3)]
SMPLH_JOINT_NAMES = SMPL_JOINT_NAMES[:BODY_JOINTS] + [f"left_{f}" for f in _FINGERS] + [f"right_{f}" for f in _FINGERS]
JOINT_NAMES = {len(SMPL_JOINT_NAMES): SMPL_JOINT_NAMES, len(SMPLH_JOINT_NAMES): SMPLH_JOINT_NAMES}
FAMILY_OF_JOINTS = {len(SMPL_JOINT_NAMES): "smpl", len(SMPLH_JOINT_NAMES): "smplh"}
GENDERS = ("neutral", "male", "female")
MODEL_SUBFOLDERS = (".", "smpl", "smplh")  # smplx's layout puts each family in its own subfolder
REQUIRED_KEYS = ["v_template", "f", "shapedirs", "posedirs", "J_regressor", "weights", "kintree_table"]
WEIGHT_SUM_TOLERANCE = 1e-3


@dataclass(frozen=True)
class BodyModel:
    """One SMPL-family model in smplx's array layout."""

    path: Path
    v_template: np.ndarray  # (V, 3), Y up, metres
    faces: np.ndarray  # (F, 3)
    shapedirs: np.ndarray  # (V, 3, K)
    posedirs: np.ndarray  # (V, 3, 9 * (J - 1))
    J_regressor: np.ndarray  # (J, V), dense
    weights: np.ndarray  # (V, J)
    parents: np.ndarray  # (J,), -1 for the root

    @property
    def joint_count(self) -> int:
        return len(self.parents)

    @property
    def family(self) -> str:
        return FAMILY_OF_JOINTS[self.joint_count]

    @property
    def joint_names(self) -> list[str]:
        return JOINT_NAMES[self.joint_count]


# ---------------------------------------------------------------- finding the files


def _family_file_names(family: str, gender: str) -> list[str]:
    """File names (lower case; '*' matches any text) a model of this family and gender may have."""
    upper = gender.upper()
    if family == "smpl":
        short = {"neutral": "neutral", "male": "m", "female": "f"}[gender]
        return [f"smpl_{upper}.npz".lower(), f"smpl_{upper}.pkl".lower(), f"basicmodel_{short}_lbs_*.pkl"]
    return [f"smplh_{upper}.npz".lower(), f"smplh_{upper}.pkl".lower(), f"{gender}/model.npz"]


def candidate_files(family_order: list[str], gender_order: list[str]) -> list[str]:
    """Every file name looked for, in the order of preference (gender first, then family)."""
    return [name for gender in gender_order for family in family_order for name in _family_file_names(family, gender)]


def _match(folder: Path, pattern: str) -> Path | None:
    """Case-insensitive match of `pattern` ('dir/name' allowed, '*' wildcard) inside `folder`."""
    parts = pattern.split("/")
    current = folder
    for i, part in enumerate(parts):
        if not current.is_dir():
            return None
        entries = sorted(current.iterdir())
        found = [e for e in entries if fnmatch.fnmatchcase(e.name.lower(), part)]
        found = [e for e in found if (e.is_dir() if i < len(parts) - 1 else e.is_file())]
        if not found:
            return None
        current = found[0]
    return current


def find_body_model(folder: str | Path, family_order: list[str], gender: str | None) -> Path:
    """The best model file in `folder` for a sequence: the requested gender, else neutral, else any
    (SMPL v1.0 ships only male and female models), with a warning when it is not the requested one.

    Raises InputError listing every file name looked for and where they were looked for.
    """
    folder = Path(folder)
    gender = normalize_gender(gender, folder)
    gender_order = list(dict.fromkeys([gender, "neutral", *GENDERS]))
    if not folder.is_dir():
        raise InputError(_missing_message(folder, family_order, gender_order), folder, "body_model")
    for g in gender_order:
        for family in family_order:
            for name in _family_file_names(family, g):
                for sub in MODEL_SUBFOLDERS:
                    path = _match(folder / sub, name)
                    if path is not None:
                        if g != gender:
                            log.warning("no %s body model in %s; using the %s one (%s)", gender, folder, g, path.name)
                        return path
    raise InputError(_missing_message(folder, family_order, gender_order), folder, "body_model")


def all_model_files(folder: str | Path) -> list[Path]:
    """Every SMPL-family model file in `folder` (for content-addressing a batch)."""
    folder = Path(folder)
    names = candidate_files(["smpl", "smplh"], list(GENDERS))
    found = {p for name in names for sub in MODEL_SUBFOLDERS if (p := _match(folder / sub, name)) is not None}
    return sorted(found)


def _missing_message(folder: Path, family_order: list[str], gender_order: list[str]) -> str:
    names = ", ".join(candidate_files(family_order, gender_order))
    subs = ", ".join(str(folder / s) if s != "." else str(folder) for s in MODEL_SUBFOLDERS)
    return (f"no SMPL-family body model found. Looked for (case-insensitive) {names} in {subs}. "
            "GRADE cannot ship or download these files (licence): register at https://smpl.is.tue.mpg.de "
            "(SMPL) or https://mano.is.tue.mpg.de (SMPL-H, as used by AMASS), download the model files "
            f"and put them in {folder} (or pass --body-model with the folder that holds them)")


def normalize_gender(value: object, file: str | Path | None = None) -> str:
    """'female' / 'f' / b'female' / 'Female' ... -> 'female'; None -> 'neutral'."""
    if value is None:
        return "neutral"
    if isinstance(value, np.ndarray):
        value = value.item()
    if isinstance(value, bytes):
        value = value.decode("latin1")
    text = str(value).strip().lower()
    aliases = {"f": "female", "m": "male", "n": "neutral", "female": "female", "male": "male", "neutral": "neutral"}
    if text not in aliases:
        raise InputError(f"unknown gender {value!r}; expected male, female or neutral", file, "gender")
    return aliases[text]


# ---------------------------------------------------------------- loading and checking


def _read_npz(path: Path, keys: list[str]) -> dict:
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {}
            for key in (k for k in data.files if k in keys):
                try:
                    arrays[key] = data[key]
                except ValueError:  # an object array (pickled): read it with the restricted Unpickler
                    with zipfile.ZipFile(path) as archive:
                        arrays[key] = load_pickled_npy(archive.read(f"{key}.npy"), path, key)
    except InputError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise InputError(f"not a readable .npz file ({exc})", path) from exc
    return arrays


def load_body_model(path: str | Path) -> BodyModel:
    """Load and check an SMPL / SMPL-H model file (.npz or .pkl, with or without chumpy arrays)."""
    path = Path(path)
    if not path.is_file():
        raise InputError("body model file not found", path)
    data = _read_npz(path, REQUIRED_KEYS) if path.suffix.lower() == ".npz" else load_model_pickle(path, REQUIRED_KEYS)
    missing = [k for k in REQUIRED_KEYS if k not in data]
    if missing:
        raise InputError(f"missing arrays {missing}; found {sorted(data)}", path, missing[0])
    try:
        arrays = {k: np.asarray(data[k], dtype=np.float64) for k in REQUIRED_KEYS}
    except (TypeError, ValueError) as exc:
        raise InputError(f"non-numeric model array ({exc})", path) from exc
    return _checked_model(path, arrays)


def _checked_model(path: Path, a: dict[str, np.ndarray]) -> BodyModel:
    def fail(field: str, message: str) -> InputError:
        return InputError(message, path, field)

    kintree = a["kintree_table"]
    if kintree.ndim != 2 or kintree.shape[0] != 2 or kintree.shape[1] not in JOINT_NAMES:
        raise fail("kintree_table", f"shape {kintree.shape} != (2, 24) for SMPL or (2, 52) for SMPL-H")
    j = kintree.shape[1]
    v_template = a["v_template"]
    if v_template.ndim != 2 or v_template.shape[1] != 3 or len(v_template) < 4:
        raise fail("v_template", f"shape {v_template.shape} is not (V, 3) with V >= 4")
    v = len(v_template)
    p = 9 * (j - 1)
    expected = {"f": None, "shapedirs": (v, 3, None), "posedirs": (v, 3, p), "J_regressor": (j, v), "weights": (v, j)}
    for key, shape in expected.items():
        arr = a[key]
        if key == "f":
            if arr.ndim != 2 or arr.shape[1] != 3 or len(arr) == 0:
                raise fail("f", f"shape {arr.shape} is not (F, 3) with F >= 1")
        elif arr.ndim != len(shape) or any(s is not None and s != d for s, d in zip(shape, arr.shape)):
            want = "(" + ", ".join("K" if s is None else str(s) for s in shape) + ")"
            raise fail(key, f"shape {arr.shape} != {want}")
        if not np.isfinite(arr).all():
            raise fail(key, "contains NaN or infinite values")
    faces = a["f"].astype(np.int64)
    if faces.min() < 0 or faces.max() >= v or not np.array_equal(faces, a["f"]):
        raise fail("f", f"face indices must be integers in [0, {v})")
    if a["shapedirs"].shape[2] == 0:
        raise fail("shapedirs", "has no shape components")
    weights = a["weights"]
    if weights.min() < 0 or np.abs(weights.sum(axis=1) - 1).max() > WEIGHT_SUM_TOLERANCE:
        raise fail("weights", "skinning weights must be >= 0 and each row must sum to 1")
    order = kintree[1].astype(np.int64)
    if not np.array_equal(order, np.arange(j)):
        raise fail("kintree_table", "row 1 must list the joints 0..J-1 in order")
    # The root's parent is stored as -1 or as 2**32 - 1 (an unsigned -1) depending on the exporter.
    parents = np.where((kintree[0] < 0) | (kintree[0] >= j), -1, kintree[0]).astype(np.int64)
    if parents[0] != -1 or any(parents[i] < 0 or parents[i] >= i for i in range(1, j)):
        raise fail("kintree_table", "joint 0 must be the only root and every parent must come before its child")
    return BodyModel(path, v_template, faces, a["shapedirs"], a["posedirs"], a["J_regressor"], weights, parents)


# ---------------------------------------------------------------- the forward pass


def fit_betas(model: BodyModel, betas: np.ndarray | None) -> np.ndarray:
    """Betas sized to the model's shape space: extra ones dropped, missing ones zero.

    AMASS betas (16) live in SMPL-H's shape space; applied to an SMPL model they only approximate the
    subject's shape (the two models' first components are similar, not equal)."""
    k = model.shapedirs.shape[2]
    out = np.zeros(k)
    if betas is not None:
        n = min(k, len(betas))
        out[:n] = np.asarray(betas, dtype=np.float64)[:n]
    return out


def shaped(model: BodyModel, betas: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Shape blend shapes and joint regression: (v_shaped (V, 3), rest joints (J, 3))."""
    v_shaped = model.v_template + np.einsum("vck,k->vc", model.shapedirs, fit_betas(model, betas))
    return v_shaped, model.J_regressor @ v_shaped


def rotation_matrices(poses: np.ndarray) -> np.ndarray:
    """(..., J, 3) axis-angle -> (..., J, 3, 3)."""
    poses = np.asarray(poses, dtype=np.float64)
    return Rotation.from_rotvec(poses.reshape(-1, 3)).as_matrix().reshape(*poses.shape[:-1], 3, 3)


def pose_offsets(model: BodyModel, rotations: np.ndarray) -> np.ndarray:
    """Pose-corrective blend shapes of one frame: (J, 3, 3) rotations -> (V, 3) offsets."""
    feature = (rotations[1:] - np.eye(3)).reshape(-1)
    return np.einsum("vcp,p->vc", model.posedirs, feature)


def joint_transforms(parents: np.ndarray, rotations: np.ndarray, joints: np.ndarray) -> np.ndarray:
    """Posed joint world transforms G (J, 4, 4) of one frame, root at its rest position (no translation)."""
    g = np.zeros((len(parents), 4, 4))
    g[:, 3, 3] = 1.0
    for j, parent in enumerate(parents):
        offset = joints[j] if parent < 0 else joints[j] - joints[parent]
        local = np.eye(4)
        local[:3, :3], local[:3, 3] = rotations[j], offset
        g[j] = local if parent < 0 else g[parent] @ local
    return g


def forward(model: BodyModel, betas: np.ndarray | None, poses: np.ndarray, trans: np.ndarray,
            pose_correctives: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Posed vertices (N, V, 3) and joints (N, J, 3) in the model's frame, as smplx's SMPL forward.

    `poses` (N, J, 3) axis-angle per model joint, `trans` (N, 3). Without `pose_correctives` the result is
    plain linear blend skinning of the shaped template, which is what UsdSkel evaluates.
    """
    v_shaped, joints = shaped(model, betas)
    rotations = rotation_matrices(poses)
    trans = np.asarray(trans, dtype=np.float64)
    vertices = np.empty((len(rotations), len(v_shaped), 3))
    posed_joints = np.empty((len(rotations), model.joint_count, 3))
    for n, frame_rotations in enumerate(rotations):
        g = joint_transforms(model.parents, frame_rotations, joints)
        # Skinning transforms A_j = G_j with the rest joint position removed: A_j v = G_j (v - J_j).
        a = g.copy()
        a[:, :3, 3] -= np.einsum("jab,jb->ja", g[:, :3, :3], joints)
        per_vertex = np.einsum("vj,jab->vab", model.weights, a[:, :3, :])
        v_posed = v_shaped + pose_offsets(model, frame_rotations) if pose_correctives else v_shaped
        vertices[n] = np.einsum("vab,vb->va", per_vertex[:, :, :3], v_posed) + per_vertex[:, :, 3] + trans[n]
        posed_joints[n] = g[:, :3, 3] + trans[n]
    return vertices, posed_joints


def sparse_skinning(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dense (V, J) weights -> (indices, weights) of shape (V, K), K the most non-zero weights of any
    vertex (4 for the real SMPL), heaviest first; padding entries have weight 0."""
    k = max(1, int((weights > 0).sum(axis=1).max()))
    order = np.argsort(-weights, axis=1, kind="stable")[:, :k]
    return order, np.take_along_axis(weights, order, axis=1)
