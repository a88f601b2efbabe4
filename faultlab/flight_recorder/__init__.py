"""PyTorch's Flight Recorder as evidence: dumps read safely, analysed across ranks, shown.

records: the portable records; dumps: the restricted unpickler and dump conversion;
analysis: cross-rank matching by sequence id and the culprit; torch_analyzer: torch's own
analyzer on normalised dumps; view: the per-rank table; evidence: dumps and torchrun error
files found in a directory, for diagnose.
"""
