"""SMPL-family converters: AMASS and plain SMPL sequences, and CLOTH3D samples, into animated packages.

Public surface: the body model (loading the user's licensed files, the numpy forward pass), sequence
reading, and the converters with their batch job builders used by `grade convert smpl|cloth3d`.
"""

from asset_converters.smpl.body_model import BodyModel, find_body_model, forward, load_body_model
from asset_converters.smpl.cloth3d import cloth3d_jobs, convert_cloth3d, read_point_cache
from asset_converters.smpl.convert import convert_sequence, sequence_jobs
from asset_converters.smpl.sequences import MotionSequence, read_sequence, resample

__all__ = [
    "BodyModel", "MotionSequence", "cloth3d_jobs", "convert_cloth3d", "convert_sequence", "find_body_model", "forward",
    "load_body_model", "read_point_cache", "read_sequence", "resample", "sequence_jobs",
]
