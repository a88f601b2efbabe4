"""faultlab: a fault-injection troubleshooting trainer for PyTorch distributed training."""
