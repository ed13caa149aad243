"""SLAM evaluation and benchmarking: trajectory metrics (ATE, RPE, missing time), SLAM runners (ORB-SLAM3,
KISS-ICP, external commands) and result tables (`grade evaluate slam`, `grade benchmark slam`)."""
