"""The signatures of the job's devices and its teardown: which GPU each rank uses, and a process group
set up again without being destroyed.

What a signature is, and the ports and addresses: signatures.py; NCCL's and gloo's transports:
signatures_transport.py; the job's own setup and its processes: signatures_job.py; py-spy's stacks and the context
lines that only carry facts: signatures_context.py.
"""

from __future__ import annotations

from .signatures import Signature

S = Signature
DEVICES: tuple[Signature, ...] = (
    S("duplicate-gpu", "NCCL: two ranks on one GPU",
      # HCCL's (Ascend NPUs) EI0015 says the same of two ranks on one NPU
      r"Duplicate GPU detected|Duplicated GPU device is not allowed"
      r"|has the same physical device ID ?\d* as (?:the )?rank",
      "culprit", "Two ranks of one communicator use the same CUDA device: set_device(local_rank) is missing.",
      literals=("Duplicate GPU detected", "Duplicated GPU device", "the same physical device ID"),
      suggests=("missing-set-device", "too-few-gpus"), family="device-index",
      specificity=0.7),
    S("invalid-device-ordinal", "CUDA: invalid device ordinal",
      r"[Ii]nvalid device ordinal|Invalid device id|device >= 0 && device < num_gpus|(?:cuda|hip)ErrorInvalidDevice\b"
      # Intel XPUs' words; torch's hint after a CUDA device error; init_process_group's check of its device_id
      r"|device is out of range, device is \d+|GPU device may be out of range|is out of range\. Please use a device",
      "culprit", "This rank asked for a CUDA device index the node does not have.",
      literals=("nvalid device ordinal", "Invalid device id", "device < num_gpus", "ErrorInvalidDevice",
                "device is out of range", "GPU device may be out of range", "Please use a device"),
      suggests=("too-few-gpus", "rank-as-device-id"), family="device-index", specificity=0.85),
    S("cuda-devices-busy", "CUDA: every device is busy or unavailable",
      r"CUDA-capable devices? ?(?:\(s\))? (?:is|are)(?:/are)? busy or unavailable|cudaErrorDevicesUnavailable", "culprit",
      "In exclusive-process mode a GPU takes one process: a second rank on it (no set_device, or more ranks "
      "than GPUs) finds it busy; another job holding the GPUs reads the same.",
      literals=("busy or unavailable", "cudaErrorDevicesUnavailable"),
      suggests=("missing-set-device", "too-few-gpus"), family="device-index", specificity=0.5),
    S("requested-more-gpus", "The framework was asked for more GPUs than the machine has",
      r"But your machine only has: \[|requested \d+ GPUs? but (?:only|the machine)"
      # fairseq; vLLM's Ray executor; Habana's Gaudi modules
      r"|world size is \d+ but have \d+ available devices|required GPUs exceeds the total number of available GPUs"
      r"|There is not enough devices available for training|Not enough available modules for world_size"
      # SageMaker's model-parallel library; torchrun --virtual-local-rank, mapping local ranks on CUDA_VISIBLE_DEVICES
      r"|processes \d+ ?cannot be larger than the device count|local_rank \d+ exceeds available GPUs"
      r"|world_size is larger than the total number of GPUs"
      # vLLM's executors (0.4 on, and its v1 engine), SGLang, torchtitan; not vLLM's Ray warning that the tensor
      # parallel size exceeds the head node's GPUs, which every multi-node Ray deployment prints
      r"|less than (?:than )?max local gpu count|is larger than the number of available GPUs \(\d+\) in this node"
      r"|Invalid number of GPUs requested: \d+ \(available"
      r"|(?:LOCAL_RANK=\d+ is outside|replica size \(\d+\) exceeds) the (?:number of )?visible \w+ device",
      "culprit", "Lightning (and others) compare the devices asked for with those present before starting "
      "('You requested gpu: [0, 1] / But your machine only has: [0]').",
      literals=("But your machine only has", "GPUs but only", "GPU but only", "GPUs but the machine",
                "available devices", "required GPUs exceeds", "not enough devices available",
                "Not enough available modules", "cannot be larger than the device count", "exceeds available GPUs",
                "max local gpu count", "number of available GPUs", "total number of GPUs",
                "Invalid number of GPUs requested", "is outside the visible", "exceeds the number of visible"),
      suggests=("too-few-gpus",), family="device-index", specificity=0.9),
    # Every public trace in the development set that had gone into set_device failed on the device index; a
    # side effect, so the error line (busy, out of memory, a broken driver) decides wherever it is there. For
    # pastes cut short only: a recording keeps the whole trace.
    S("set-device-in-trace", "A traceback that went into torch's set_device (or CuPy's Device.use)",
      r"torch[/\\]cuda[/\\]__init__\.py\", line \d+, in set_device\b"
      r"|cupy[/\\]cuda[/\\]device\.pyx\", line \d+, in cupy\.cuda\.device\.Device\.use\b", "culprit",
      "The trace went into torch.cuda.set_device (or CuPy's Device.use, which NCCL code on CuPy calls): where it "
      "was cut before its error line, the device index the process asked for is the likeliest failure.",
      (), literals=(", in set_device", "in cupy.cuda.device.Device.use"), suggests=("too-few-gpus", "rank-as-device-id"),
      family="device-index",
      effect="side", specificity=0.6),
    S("duplicate-device-ids", "The trainer was given one GPU twice",
      r"Device ID's \(GPU\) must be unique", "culprit",
      "Lightning refuses a device list that names a GPU twice (--gpus \"0,0\"): two processes were wanted on one "
      "GPU, which NCCL does not allow.",
      literals=("Device ID's (GPU) must be unique",), suggests=("too-few-gpus", "missing-set-device"),
      family="device-index", specificity=0.8),
    S("destroy-not-called", "destroy_process_group() was not called before exit",
      r"destroy_process_group\(\) was not called before program exit|process group has NOT been destroyed before"
      r"|(?:must|should) call destroy_process_group\(?\)? before (?:process|program) exit",
      "neutral", "The process group was never torn down; resources may leak.",
      literals=("destroy_process_group() was not called", "has NOT been destroyed", "call destroy_process_group"),
      suggests=("missing-destroy-process-group",), family="teardown", effect="side", specificity=0.9),
    S("default-pg-twice", "Default process group initialized twice",
      r"trying to initialize the default process group twice"
      # Megatron's parallel state, and vLLM's copy of it: its groups set up again without being torn down
      r"|(?:data|model|tensor model|pipeline model|tensor|pipeline|expert) parallel group is already initialized",
      "culprit",
      "init_process_group (or a parallel-state library's group set-up) ran again in a process whose groups were "
      "never destroyed.",
      literals=("default process group twice", "parallel group is already initialized"),
      suggests=("missing-destroy-process-group",), family="teardown",
      specificity=0.9),
)
