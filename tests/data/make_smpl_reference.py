"""Write tests/data/smpl_reference.npz: vertices and joints of the synthetic SMPL model (tests/smpl_fixtures.py)
computed by the real smplx package, for tests/test_smpl.py to compare the numpy forward pass against on every
run without torch.

torch is not part of the project's environment, so run this once in a throwaway one:

    python3 -m venv /tmp/smplx-venv
    /tmp/smplx-venv/bin/pip install torch==2.13.0 smplx==0.1.28 numpy scipy pydantic pyyaml
    /tmp/smplx-venv/bin/python tests/data/make_smpl_reference.py

(pydantic and pyyaml only because smpl_fixtures imports core.seeding, whose package imports the config.)
Run it again whenever build_model changes: the test checks the stored model digest first.
"""

from __future__ import annotations

import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

import numpy as np
import smplx
import torch
from smplx.utils import Struct

TESTS = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(TESTS.parent), str(TESTS)]  # the repository (core.seeding) and tests/ (smpl_fixtures)

from smpl_fixtures import build_model, model_digest, save_npz

from core.seeding import generator

OUT = TESTS / "data" / "smpl_reference.npz"
BODIES, FRAMES, JOINTS, BETAS = 2, 3, 24, 10
# smplx appends face keypoints picked by vertex id; the synthetic mesh has no face, any valid ids do.
FACE_VERTEX_IDS = {key: i for i, key in enumerate(["nose", "reye", "leye", "rear", "lear"])}


def main() -> None:
    model = build_model()
    rng = generator(0, "tests/smpl/smplx-reference")
    poses = rng.normal(0.0, 0.5, (BODIES, FRAMES, JOINTS, 3))
    betas = rng.normal(0.0, 1.0, (BODIES, BETAS))
    trans = rng.normal(0.0, 1.0, (BODIES, FRAMES, 3))
    vertices, joints = [], []
    with tempfile.TemporaryDirectory() as folder:
        # An .npz model file, as smplx reads SMPL-H/SMPL-X ones; SMPL's own loader would want a chumpy pickle.
        path = save_npz(model, Path(folder) / "SMPL_NEUTRAL.npz")
        struct = Struct(**dict(np.load(path)))
        body = smplx.SMPL(model_path=str(path), data_struct=struct, vertex_ids=FACE_VERTEX_IDS, use_hands=False,
                          use_feet_keypoints=False, num_betas=BETAS, batch_size=FRAMES, dtype=torch.float64)
        for b in range(BODIES):
            out = body(betas=torch.tensor(np.repeat(betas[b][None], FRAMES, 0)),
                       global_orient=torch.tensor(poses[b, :, 0]),
                       body_pose=torch.tensor(poses[b, :, 1:].reshape(FRAMES, -1)),
                       transl=torch.tensor(trans[b]))
            vertices.append(out.vertices.detach().numpy())
            joints.append(out.joints.detach().numpy()[:, :JOINTS])  # the model joints, before the face keypoints
    np.savez_compressed(OUT, poses=poses, betas=betas, trans=trans, vertices=np.stack(vertices),
                        joints=np.stack(joints), model_digest=np.array(model_digest(model)),
                        smplx_version=np.array(version("smplx")),
                        torch_version=np.array(torch.__version__))
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
