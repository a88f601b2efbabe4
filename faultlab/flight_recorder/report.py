"""How torch's Flight Recorder analyzer (fr_trace, torchfrtrace) words its report: read from its run
here (torch_analyzer) and from a report pasted into a log (diagnose's signatures and facts)."""

# The ranks of a collective's group missing from it; those that left no dump; the one at odds; the group.
MISSING_RANKS = r"missing ranks: \{([\d, ]+)\}"
NO_DUMP_RANKS = r"missed FR dumps from ranks \(\{([\d, ]+)\}\)"
CULPRIT_RANK = r"Culprit rank (\d+)"
EXPECTED_RANKS = r"expected ranks: \{([\d, ]+)\}"
# Each entry of the report begins with the collective's sequence number.
SEQUENCE = r"(?:sequence number:|Collective sequence number:)\s*(\d+)"
