"""PyTorch's Flight Recorder as evidence: dumps taken in every rank, read safely, analysed across ranks.

records: the portable records; dumper: inside each rank, the dumps at exit, error, SIGTERM
and faultlab's deadline request; run_dumps: a run directory's dumps into a capture; dumps:
the restricted unpickler and the dump conversion; analysis: cross-rank matching by sequence
id and the culprit; torch_analyzer: torch's own analyzer on normalised dumps; view: the
per-rank table; evidence: dumps and torchrun error files in a directory, for diagnose.
"""
