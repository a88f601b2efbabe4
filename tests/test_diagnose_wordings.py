"""diagnose reads a family by its meaning, across the wordings of torch, NCCL, gloo, DeepSpeed,
ColossalAI, shells and kernels: each case is a short realistic log, the answer expected first,
and an alternative that must stay among the first three where one line cannot decide."""

import pytest

from faultlab import diagnose

N = diagnose.NOT_IN_CATALOG
CASES = [  # (the answer expected first, another that must be among the first three, the log)
    ('wrong-master-addr', 'wrong-socket-interface',
     '[W socket.cpp:601] [c10d] The client socket has failed to connect to [gpu-node-3]:29500 (errno: '
     '111 - Connection refused). remote=[127.0.1.1]:29500\n'),
    ('wrong-master-addr', None,
     '[rank4]: torch.distributed.DistNetworkError: The client socket has failed to connect to '
     '[localhost]:29500 (errno: 111 - Connection refused).\n'
     '--nnodes=2\n'),
    ('too-few-gpus', None,
     'torchrun --nproc_per_node=4 train.py\n'
     'CUDA_VISIBLE_DEVICES=0,1\n'
     '[rank2]: Duplicate GPU detected : rank 2 and rank 0 both on CUDA device 1a000\n'),
    ('too-few-gpus', None,
     'node:12:12 [0] NCCL INFO cudaDev 0 ...\n'
     '[rank3]:torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, invalid '
     'usage, NCCL version 2.19.3\n'
     'ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\n'
     'Last error:\n'
     'Duplicate GPU detected : rank 3 and rank 1 both on CUDA device 41000\n'
     'Duplicate GPU detected : rank 2 and rank 0 both on CUDA device 1000\n'
     'torch.cuda.device_count() = 2\n'),
    ('link-down', None,
     'host:1:2 [3] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : port error\n'
     '[rank3]: torch.distributed.DistBackendError: NCCL error: remote process exited or there was a '
     'network error, NCCL version 2.18.1\n'
     'ncclRemoteError: A call failed possibly due to a network error or a remote process exiting '
     'prematurely.\n'),
    ('link-down', None,
     'node023:10214:10303 [0] transport/net_ib.cc:1909 NCCL WARN NET/IB : Got completion from peer '
     '10.1.3.201<33057> with status=12 opcode=0 len=0 vendor err 129 (Send) localGid '
     '::ffff:10.206.1.23\n'),
    ('link-down', None,
     'node-0:139577:139678 [0] transport/net_ib.cc:154 NCCL WARN NET/IB : mlx5_1:1 async fatal event '
     'on QP (0x7309dc3bb338): invalid request local work queue error\n'),
    ('link-down', None,
     'x:815:864 [0] transport/net_ib.cu:80 NCCL WARN NET/IB : Got async event : local catastrophic '
     'error\n'),
    # NCCL <= 2.18 warns of every event alike: a port back up or a subnet manager's change is no link failing.
    (N, None,
     'x:815:864 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : mlx5_0:1 Got async event : port active\n'
     'x:815:864 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : mlx5_0:1 Got async event : client '
     'reregistration\n'),
    ('rank-crash', None,
     '[rank1]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote '
     'process exited or there was a network error, NCCL version 2.20.5\n'
     'ncclRemoteError: A call failed possibly due to a network error or a remote process exiting '
     'prematurely.\n'
     'ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 0 (pid: '
     '311) of binary: python\n'),
    ('no-launcher', None,
     'Traceback (most recent call last):\n'
     '  File "train.py", line 10, in <module>\n'
     '    colossalai.launch_from_torch(config={})\n'
     "RuntimeError: Could not find 'RANK' in the torch environment, visit https://www.colossalai.org/ "
     'for more information on launching with torch\n'),
    ('no-launcher', None,
     '[2024-01-01 10:00:00,000] [INFO] [comm.py:637:init_distributed] Not using the DeepSpeed or dist '
     'launchers, attempting to detect MPI environment...\n'
     "ModuleNotFoundError: No module named 'mpi4py'\n"),
    ('no-launcher', None,
     '  File "train.py", line 5, in setup\n'
     "    os.environ['MASTER_ADDR']\n"
     "KeyError: 'MASTER_ADDR'\n"),
    ('no-launcher', None,
     '  File "train.py", line 5, in setup\n'
     '    local_rank = int(os.environ["LOCAL_RANK"])\n'),
    ('no-launcher', None,
     "    world_size = int(os.environ['WORLD_SIZE'])\n"),
    ('no-launcher', None,
     "    master = os.environ['MASTER_ADDR']\n"),
    ('no-launcher', None,
     "    local_rank = int(os.getenv('LOCAL_RANK'))\n"
     'TypeError: int() argument must be a string, a bytes-like object or a real number, not '
     "'NoneType'\n"),
    ('no-launcher', None,
     'ValueError: Error initializing torch.distributed using env:// rendezvous: environment variable '
     'MASTER_ADDR expected, but not set\n'),
    ('no-launcher', None,
     "KeyError: 'SLURM_PROCID'\n"),
    ('no-launcher', None,
     "KeyError: 'OMPI_COMM_WORLD_LOCAL_RANK'\n"),
    ('wrong-master-addr', None,
     'socket.gaierror: [Errno -2] Name or service not known\n'),
    ('wrong-master-addr', None,
     '[W socket.cpp:697] [c10d] The IPv4 network addresses of (master-0, 29500) cannot be retrieved '
     '(gai error: -3 - Temporary failure in name resolution).\n'),
    ('wrong-master-addr', None,
     'torch.distributed.DistNetworkError: The client socket cannot be retrieved (gai error: -5 - No '
     'address associated with hostname)\n'),
    ('wrong-master-addr', None,
     'RuntimeError: [../third_party/gloo/gloo/transport/tcp/device.cc:83] ai_family == AF_INET || '
     'ai_family == AF_INET6. getaddrinfo: Name or service not known\n'),
    ('rank-crash', None,
     '[rank2]: torch.OutOfMemoryError: CUDA out of memory.\n'
     '[rank0]:[W ProcessGroupNCCL.cpp:1250] Warning: WARNING: process group has NOT been destroyed '
     'before we destruct ProcessGroupNCCL.\n'
     '[rank1]:[W ProcessGroupNCCL.cpp:1250] Warning: WARNING: process group has NOT been destroyed '
     'before we destruct ProcessGroupNCCL.\n'
     '[rank2]:[W ProcessGroupNCCL.cpp:1250] Warning: WARNING: process group has NOT been destroyed '
     'before we destruct ProcessGroupNCCL.\n'
     '[rank3]:[W ProcessGroupNCCL.cpp:1250] Warning: WARNING: process group has NOT been destroyed '
     'before we destruct ProcessGroupNCCL.\n'
     'W0101 torch/distributed/elastic/multiprocessing/api.py:858] Sending process 100 closing signal '
     'SIGTERM\n'),
    (N, 'rank-crash',
     '[rank0]:[E ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: '
     'WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600013 '
     'ms\n'
     '[rank1]:[E ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation timeout: '
     'WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600013 '
     'ms\n'
     '[rank3]:[E ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught collective operation timeout: '
     'WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600013 '
     'ms\n'
     '[rank2]: RuntimeError: CUDA error: an illegal memory access was encountered\n'),
    (N, None,
     'RuntimeError: CUDA error: an illegal memory access was encountered\n'
     'CUDA kernel errors might be asynchronously reported at some other API call\n'),
    (N, None,
     'RuntimeError: CUDA error: device-side assert triggered\n'),
    (N, None,
     'RuntimeError: CUDA error: uncorrectable ECC error encountered\n'),
    (N, None,
     'ImportError: /usr/lib/libnccl.so.2: undefined symbol: ncclCommRegister\n'),
    (N, None,
     'RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasGemmEx(...)`\n'),
    ('shm-exhausted', None,
     'RuntimeError: unable to write to file </torch_18692_1954506162_0>: No space left on device (28)\n'),
    ('shm-exhausted', None,
     "OSError: [Errno 28] No space left on device: '/dev/shm/psm_abc'\n"),
    ('shm-exhausted', None,
     'ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared '
     'memory (shm).\n'),
    ('shm-exhausted', None,
     '[E ProcessGroupNCCL] ... failed (exitcode: -7) local_rank: 0 (pid: 123) of binary: python\n'
     'Signal 7 (SIGBUS) received by PID 123\n'),
    (N, 'shm-exhausted',
     'OSError: [Errno 28] No space left on device\n'),
    (N, None,
     "OSError: [Errno 28] No space left on device: '/home/user/checkpoints/model.pt'\n"),
    (N, 'wrong-socket-interface',
     "Test NCCL failure common.cu:959 'internal error - please report this issue to the NCCL "
     "developers / '\n"),
    (N, 'wrong-socket-interface',
     'torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1691, internal error - '
     'please report this issue to the NCCL developers, NCCL version 2.18.1\n'
     'ncclInternalError: Internal check failed.\n'),
    ('nccl-without-gpu', None,
     '    raise RuntimeError("Distributed package doesn\'t have NCCL " "built in")\n'),
    ('nccl-without-gpu', None,
     "RuntimeError: Distributed package doesn't have NCCL built in\n"),
    ('nccl-without-gpu', None,
     'RuntimeError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!\n'),
    ('rank-as-device-id', None,
     'torchrun --nnodes=2 --nproc_per_node=4\n'
     '[rank5]: RuntimeError: CUDA error: invalid device ordinal\n'),
    ('rank-as-device-id', None,
     '[rank5]: torch.cuda.set_device(5)\n'
     '[rank5]: RuntimeError: CUDA error: invalid device ordinal\n'
     'CUDA_VISIBLE_DEVICES=0,1,2,3\n'),
    ('too-few-gpus', 'rank-as-device-id',
     'RuntimeError: CUDA error: invalid device ordinal\n'),
    ('port-in-use', None,
     'RuntimeError: The server socket has failed to listen on any local network address. The server '
     'socket has failed to bind to [::]:29500 (errno: 98 - Address already in use).\n'),
    ('port-in-use', None,
     'torch.distributed.DistNetworkError: The server socket has failed to listen on any local network '
     'address. port: 29500, useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use\n'),
    ('port-in-use', None,
     'RuntimeError: The server socket has failed to bind to 0.0.0.0:29500 (errno: 10048 - Only one '
     'usage of each socket address (protocol/network address/port) is normally permitted.).\n'),
    ('rank-crash', None,
     'Killed\n'),
    ('rank-crash', None,
     '[1234.5] Out of memory: Killed process 4321 (python) total-vm:123kB\n'),
    # alone, one process's failure as likely as a rank's (test_diagnose_reasoning: a lone allocation failure)
    ('not-in-catalog', 'rank-crash',
     'RuntimeError: [enforce fail at alloc_cpu.cpp:114] data. DefaultCPUAllocator: not enough memory: '
     'you tried to allocate 1048576 bytes.\n'),
    ('wrong-socket-interface', None,
     'host:1:1 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 172.17.0.1<43129> '
     'failed : Connection refused\n'),
    ('wrong-master-addr', None,
     '[W socket.cpp:601] [c10d] The client socket has failed to connect to [10.0.0.9]:29500 (errno: '
     '113 - No route to host).\n'),
    ('collective-mismatch', None,
     '[rank0]:[E ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: '
     'WorkNCCL(SeqNum=101, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for '
     '600013 ms\n'
     '[rank1]:[E ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation timeout: '
     'WorkNCCL(SeqNum=101, OpType=ALLREDUCE, NumelIn=4, NumelOut=4, Timeout(ms)=600000) ran for '
     '600013 ms\n'),
    ('port-in-use', None,
     'ConnectionError: Tried to launch distributed communication on port `29500`, but another process is '
     'utilizing it. Please specify a different port (such as using the `--main_process_port` flag)\n'),
    (N, 'port-in-use',
     '  File "/usr/lib/python3.8/site-packages/torch/distributed/rendezvous.py", line 133, in _tcp_rendezvous_handler\n'
     '    store = TCPStore(result.hostname, result.port, world_size, start_daemon, timeout)\n'),
    ('straggler-rank', 'world-size-mismatch',
     'RuntimeError: Timed out initializing process group in store based barrier on rank: 3, for key: '
     'store_based_barrier_key:1 (world_size=4, worker_count=2, timeout=0:30:00)\n'),
    ('too-few-gpus', None,
     'lightning_fabric.utilities.exceptions.MisconfigurationException: You requested gpu: [0, 1, 2, 3]\n'
     ' But your machine only has: [0]\n'),
    ('too-few-gpus', 'rank-as-device-id',
     'RuntimeError: device >= 0 && device < num_gpus INTERNAL ASSERT FAILED at "../aten/src/ATen/cuda/CUDAContext.cpp":50\n'),
    (N, 'rank-crash',  # and shm-exhausted: both among the first three, neither sure
     'RuntimeError: DataLoader worker (pid(s) 20312, 20313) exited unexpectedly\n'),
    ('wrong-master-addr', None,
     '[W socket.cpp:601] [c10d] The client socket has failed to connect to [10.8.0.4]:29500 (errno: 101 - '
     'Network is unreachable).\n'),
    ('nccl-without-gpu', None, 'AssertionError: Torch not compiled with CUDA enabled\n'),
    ('collective-mismatch', None,
     'node1:12:40 [0] transport/net_ib.cc:1163 NCCL WARN NET/IB : collective mismatch error, local size 4096 '
     'remote size 8192 in Recv\n'),
    (N, None,
     '[W socket.cpp:663] [c10d] The client socket has failed to connect to [localhost]:29500 (errno: 97 - '
     'Address family not supported by protocol).\n'),
    (N, 'rank-crash',
     '[rank0]:[E ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: '
     'WorkNCCL(SeqNum=3, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600100 ms\n'
     '[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered\n'
     'Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n'),
    ('too-few-gpus', 'rank-as-device-id',
     '[rank2]: RuntimeError: CUDA error: invalid device ordinal\n'
     'Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n'),
    (N, None,
     "RuntimeError: unable to open shared memory object </torch_4312_21456> in read-write mode: Too many open "
     "files (24)\n"),
    ('too-few-gpus', 'rank-as-device-id',
     '    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))\n'
     '[rank5]: RuntimeError: CUDA error: invalid device ordinal\n'),
    ('no-launcher', None,
     '  File "/opt/conda/lib/python3.10/site-packages/lightning_fabric/plugins/environments/torchelastic.py", '
     'line 58, in global_rank\n'
     '    return int(os.environ["RANK"])\n'),
    ('nccl-without-gpu', 'too-few-gpus',
     'pytorch_lightning.utilities.exceptions.MisconfigurationException: You requested GPUs: [1]\n'
     ' But your machine only has: []\n'),
    ('no-launcher', N,
     'RuntimeError: Default process group has not been initialized, please make sure to call init_process_group.\n'),
    ('rank-crash', None, 'slurmstepd: error: Detected 1 oom_kill event in StepId=4512.0. Some of the step tasks '
                         'have been OOM Killed.\n'),
    ('rank-crash', None, 'gpu-7:88:91 [3] NCCL WARN Cuda failure \'out of memory\'\n'),
    ('wrong-socket-interface', None,
     'host:1:9 [0] NCCL WARN Net : No interface found in the same subnet as remote address fe80::1%eth1<35213>\n'),
    ('missing-set-device', 'too-few-gpus',
     '[rank1]: RuntimeError: CUDA error: all CUDA-capable devices are busy or unavailable\n'),
    ('missing-set-device', 'too-few-gpus',
     'RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable\n'),
    ('nccl-without-gpu', None, 'RuntimeError: PyTorch is not compiled with NCCL support\n'),
    (N, None, '[rank1]: RuntimeError: No backend type associated with device type cpu\n'),
    (N, None, 'RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. '
              'This error indicates that your module has parameters that were not used in producing loss.\n'),
    ('duplicate-node-rank', 'world-size-mismatch',
     'RuntimeError: Timed out initializing process group in store based barrier on rank: 0, for key: '
     'store_based_barrier_key:1 (world_size=8, worker_count=16, timeout=0:30:00)\n'),
    ('no-launcher', None, 'ValueError: Error initializing torch.distributed using env:// rendezvous: rank is not set '
                          'but it is required for env:// init method\n'),
    ('straggler-rank', None, 'RuntimeError: timed out initializing process group in store based barrier on rank: 1, '
                             'for key: store_based_barrier_key:1 (world_size=2, worker_count=1, timeout=0:30:00)\n'),
    ('shm-exhausted', 'rank-crash', 'Fatal Python error: Bus error\n'),
    ('collective-mismatch', None,
     'RuntimeError: Unable to unpickle data from other workers. all_gather_list requires all workers to enter '
     'the function together, so this error usually indicates that the workers have fallen out of sync somehow.\n'),
    ('wrong-socket-interface', 'firewall',
     'gpu-a:123:456 [0] NCCL INFO ncclCommInitRank comm 0x5561 rank 0 nranks 16 cudaDev 0 busId 1000 - Init START\n'
     'torchrun --nnodes=2 --nproc_per_node=8 train.py\n'
     '[rank0]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/'
     'ProcessGroupNCCL.cpp:1970, remote process exited or there was a network error, NCCL version 2.20.5\n'
     'ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.\n'),
    ('wrong-socket-interface', 'firewall',
     '[2024-01-08 16:13:56,462] [INFO] [multinode_runner.py:80:get_cmd] Running on the following workers: '
     '10.0.3.100,10.0.3.101\n'
     'torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1333, '
     'remote process exited or there was a network error, NCCL version 2.18.6\n'),
    (N, 'missing-set-device',
     'torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1287, '
     'invalid usage, NCCL version 2.17.1\n'
     'ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\n'),
    ('firewall', 'wrong-socket-interface',
     'gpu-a:1:2 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: connect returned Connection timed out, exceeded '
     'error retry count (35)\n'),
    (N, 'rank-crash',
     '[rank1]:[W1203 10:00:00.1 ProcessGroupNCCL.cpp:1399] [PG ID 0 PG GUID 0 Rank 1] Failed to check the "should '
     'dump" flag on TCPStore, (maybe TCPStore server has shut down too early), with error: Connection reset by peer\n'),
    (N, 'straggler-rank',
     '[rank2]:[E1203 ProcessGroupNCCL.cpp:1423] [PG ID 0 PG GUID 0(default_pg) Rank 2] Heartbeat monitor timed out! '
     'Process will be terminated after dumping debug info. workMetaList_.size()=1\n'),
    ('world-size-mismatch', None,
     'node:1:2 [0] bootstrap.cc:123 NCCL WARN Bootstrap Root : mismatch in rank count from procs 8 : 16\n'),
    ('duplicate-node-rank', 'split-world',
     'node:1:2 [0] bootstrap.cc:123 NCCL WARN Bootstrap Root : rank 3 of 8 ranks has already checked in\n'),
    ('shared-master-port', 'port-in-use',
     '[W socket.cpp] TCP client failed to connect/validate to host 10.0.0.1:29500 - retrying (try=0, '
     'timeout=1800000ms, delay=1000ms): Ping failed, invalid value returned from server. Expected: 42, Got: 0\n'),
    (N, None, 'train.py: error: unrecognized arguments: --local-rank=0\n'),
    (N, None, 'ssh: connect to host worker-1 port 22: Connection refused\n'
              'pdsh@master: worker-1: ssh exited with exit code 255\n'),
    ('no-launcher', N, 'AssertionError: Default process group is not initialized\n'),
    ('wrong-socket-interface', None,
     'RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:208] ifa != nullptr. Unable to '
     'find interface for: [10.0.0.5]\n'),
    ('shm-exhausted', None,
     'gpu:1:2 [0] misc/shmutils.cc:73 NCCL WARN Error: failed to create shared memory file /dev/shm/nccl-AbCdEf, '
     'error No space left on device (28)\n'),
    ('straggler-rank', N, 'torch.distributed.DistStoreError: Socket Timeout\n'),
    (N, None,
     'gpu-a:1:2 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<44321> with '
     'status=4 opcode=0 len=0 vendor err 81 (Recv) localGid ::ffff:10.0.0.1 remoteGids::ffff:10.0.0.2\n'),
    ('wrong-master-port', None, 'ValueError: port must have value from 0 to 65535 but was 70000.\n'),
    ('wrong-master-port', None,
     'ValueError: Error initializing torch.distributed using tcp:// rendezvous: port number missing\n'),
    ('no-launcher', None,
     'ValueError: Error initializing torch.distributed using tcp:// rendezvous: rank parameter missing\n'),
    ('wrong-master-addr', None,
     "ValueError: The hostname of the rendezvous endpoint ':29400' must be a dot-separated list of labels, an "
     "IPv4 address, or an IPv6 address.\n"),
    ('port-in-use', None,  # the port cannot be had (here: below 1024 without privilege)
     'torch.distributed.DistNetworkError: The server socket has failed to bind. port: 80, useIpv6: 0, code: -13, '
     'name: EACCES, message: permission denied\n'),
    ('shared-master-port', None, 'RuntimeError: Stop_waiting response is expected\n'),
    ('firewall', 'wrong-socket-interface',
     '[E debug_logger.cc:21] failed to connect, willRetry=0, retry=3, retryLimit=3, rank=1, size=2, '
     'local=[10.0.0.2]:45678, remote=[10.0.0.1]:12345, error=SO_ERROR: Connection timed out\n'),
    ('world-size-mismatch', None,
     'node:1:2 [0] bootstrap.cc:341 NCCL WARN Bootstrap Root : localId 5 is out of range\n'),
    ('world-size-mismatch', None,
     'ValueError: You set `devices=4` in Lightning, but the number of tasks per node configured in SLURM '
     '`--ntasks-per-node=1` does not match. HINT: Set `devices=1`.\n'),
    ('nccl-without-gpu', None,
     'MisconfigurationException: GPUAccelerator can not run on your system since the accelerator is not '
     'available.\n'),
    (N, None,
     'ValueError: CUDA has been initialized before the `notebook_launcher` could create a forked subprocess. '
     'This likely stems from an outside import causing issues once the `notebook_launcher()` is called.\n'),
    ('rank-crash', None,
     '[rank1]: torch.distributed.DistBackendError: [1] is setting up NCCL communicator and retrieving '
     "ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: Connection reset "
     'by peer\n'),
    ('straggler-rank', None,
     '[rank1]:[E ProcessGroupNCCL.cpp:1595] [PG 0 Rank 1] Timeout at NCCL work: 5, last enqueued NCCL work: 5, '
     'last completed NCCL work: 4.\n'),
    ('rank-crash', None,
     '[../third_party/gloo/gloo/transport/tcp/pair.cc:534] writev [10.0.0.2]:45678: Broken pipe\n'),
    # torch <= 1.x's connect timeout, without the "Original timeout" later versions add
    ('firewall', 'wrong-master-addr', 'RuntimeError: connect() timed out.\n'),
    # torch <= 1.7's store wait
    ('straggler-rank', None, 'RuntimeError: Wait timeout\n'),
    # torch 2.4+'s store get of the NCCL id
    ('straggler-rank', None,
     "RuntimeError: [1] is setting up NCCL communicator and retreiving ncclUniqueId from [0] via c10d key-value "
     "store by key '0', but store->get('0') got error: Timeout waiting for key: default_pg/0/0\n"),
    # a FileStore's get (init_method="file://..."), bare: a late or dead rank, no port or interface
    ('straggler-rank', 'rank-crash', "RuntimeError: Timeout waiting for key: default_pg/0//cuda//0 after 1800000 ms\n"),
    # torchrun --virtual-local-rank maps each local rank through CUDA_VISIBLE_DEVICES before starting it
    ('too-few-gpus', None, "ValueError: local_rank 2 exceeds available GPUs in CUDA_VISIBLE_DEVICES=0,1\n"),
    # init_process_group's own check of the device_id it was given
    ('too-few-gpus', 'rank-as-device-id',
     "ValueError: device_id cuda:4 is out of range. Please use a device index less than the number of "
     "accelerators available: 4.\n"),
    # torch's get_node_local_rank() outside a launcher; init_method file:// without a world size
    ('no-launcher', None,
     "RuntimeError: LOCAL_RANK is not in the environment. Consider passing fallback_rank to allow "
     "`get_node_local_rank` to work, assuming you are not running in a multi-device context and want the code "
     "to run locally instead.\n"),
    ('no-launcher', None,
     "ValueError: Error initializing torch.distributed using file:// rendezvous: world size parameter missing\n"),
    # Lightning's devices x num_nodes against the world torchrun started
    ('world-size-mismatch', None,
     "ValueError: You set `devices=4` and `num_nodes=2` in Lightning, but the product (4 * 2) does not match "
     "the world size (4).\n"),
    # torch.distributed.rpc's TensorPipe dialing the address a peer advertised, once the store had worked
    ('wrong-socket-interface', 'firewall',
     "got rpc 0\n[W tensorpipe_agent.cpp:641] RPC agent for Test0 encountered error when sending outgoing request #0 "
     "to Test1: ECONNREFUSED: connection refused\nRuntimeError: ECONNREFUSED:\n"),
    # libuv's words for an unreachable host; the ibv transport's capitalised refusal
    ('wrong-socket-interface', 'firewall',
     "RuntimeError: EHOSTUNREACH: host is unreachable (this error originated at tensorpipe/common/socket.cc:114)\n"),
    ('wrong-socket-interface', 'firewall',
     "RuntimeError: connect: Connection refused (this error originated at "
     "tensorpipe/transport/ibv/connection_impl.cc:80)\n"),
    # TensorPipe dials when first needed: refused after a rank died, or after the peer's connection ended
    ('rank-crash', None,
     "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
     "[W tensorpipe_agent.cpp:641] RPC agent for worker0 encountered error when sending outgoing request #12 to "
     "worker1: ECONNREFUSED: connection refused\n"),
    ('rank-crash', None,
     "[W tensorpipe_agent.cpp:726] RPC agent for worker0 encountered error when reading incoming response from "
     "worker1: EOF: end of file (this error originated at tensorpipe/transport/uv/connection_impl.cc:132)\n"
     "[W tensorpipe_agent.cpp:641] RPC agent for worker0 encountered error when sending outgoing request #13 to "
     "worker1: ECONNREFUSED: connection refused\n"),
    # the shm transport's end of file: the peer process is gone
    ('rank-crash', None, "RuntimeError: eof (this error originated at tensorpipe/transport/shm/connection_impl.cc:259)\n"),
    # TensorPipe's listener refused the address it picked (an IPv6 link-local address without its scope)
    ('wrong-socket-interface', None,
     "terminate called after throwing an instance of 'std::runtime_error'\n"
     "what():  In initFromLoop at /pytorch/third_party/tensorpipe/tensorpipe/transport/uv/listener.cc:126 "
     "\"rv < 0: invalid argument\"\n"),
    ('wrong-socket-interface', None,
     "what():  In initFromLoop at /pytorch/third_party/tensorpipe/tensorpipe/transport/uv/listener.cc:126 "
     "\"rv < 0: address not available\"\n"),
    # a paste cut inside the word
    ('nccl-without-gpu', None, "RuntimeError: ProcessGroupNCCL is only supported with GP\n"),
    # NCCL >= 2.29 names an InfiniBand completion's status, reports non-fatal port events, gives a failed HCA up
    ('link-down', None,
     "node1:123:456 [3] transport/net_ib/p2p.cc:1203 NCCL WARN NET/IB: Got completion from peer 10.0.0.2<49203> with "
     "status=IBV_WC_REM_ACCESS_ERR(10) opcode=IBV_WC_SEND(0) vendor_err=136 qp_num=1234 hca mlx5_0\n"),
    ('link-down', None,
     "node1:123:456 [3] transport/net_ib/common.cc:88 NCCL WARN NET/IB : mlx5_0:1 Got non-fatal async event: "
     "port error(10)\n"),
    ('link-down', None,
     "node1:123:456 [3] transport/net_ib/common.cc:88 NCCL WARN NET/IB: Fatal error. Detected 1 failed devices out "
     "of 1 devices on the send communicator (comm=0x7f). No support for more than a single failed device.\n"),
    ('link-down', None,
     "node1:123:456 [3] transport/net_ib/common.cc:88 NCCL WARN NET/IB: Device 1 marked as failed. Initiating "
     "recovery? yes (send comm=0x7f, outstandingRecovery=1)\n"),
    # NCCL 2.19-2.26 print every non-fatal IB event as an "error event": only a port error is the link
    ('link-down', None, "node1:123:456 [3] transport/net_ib.cc:120 NCCL WARN NET/IB : mlx5_2:1 Got async error event: "
                        "port error\n"),
    (N, None, "node1:123:456 [3] transport/net_ib.cc:120 NCCL WARN NET/IB : mlx5_2:1 Got async error event: "
              "port active\n"),
    # NCCL 2.18's IB size check of a send against its receive; its connects that ran out of time
    ('collective-mismatch', None,
     "node1:123:456 [1] transport/net_ib.cc:1200 NCCL WARN NET/IB : req 1/1 tag 7 peer 10.0.0.2<43120> collective "
     "mismatch error, local size 1048576 remote size 524288\n"),
    ('wrong-socket-interface', 'firewall',
     "node1:123:456 [1] misc/socket.cc:624 NCCL WARN socketPollConnect: exceeded timeouts (20)\n"),
    # a port coming up, a subnet manager's change: not the link going down
    (N, None, "node1:123:456 [3] transport/net_ib/common.cc:88 NCCL WARN NET/IB : mlx5_0:1 Got non-fatal async "
              "event: port active(9)\n"),
    # the named status of a memory-protection error (4) is the program's, not the link's
    (N, None, "node1:123:456 [3] transport/net_ib/p2p.cc:1203 NCCL WARN NET/IB: Got completion from peer "
              "10.0.0.2<49203> with status=IBV_WC_LOC_PROT_ERR(4) opcode=IBV_WC_RECV(128) vendor_err=51 qp_num=99\n"),
    # NCCL's allocations (its proxy's pinned host memory)
    ('rank-crash', None, "node1:123:456 [2] include/alloc.h:210 NCCL WARN Failed to CUDA host alloc 4194304 bytes\n"),
    ('rank-crash', None, "node1:123:456 [2] include/alloc.h:210 NCCL WARN Failed to CUDA calloc async 8388608 bytes\n"),
    # NCCL >= 2.28's listener, dialed by a process of another communicator
    ('shared-master-port', 'split-world',
     "node1:123:456 [0] misc/socket.cc:650 NCCL WARN Socket magic mismatch from 10.0.0.3<51234> (peer "
     "0x9a3c12e6f0b7d2a1 != expected 0x1f2e3d4c5b6a7988), discarding peer connection\n"),
    ('shared-master-port', 'split-world',
     "node1:123:456 [0] misc/socket.cc:650 NCCL WARN Wrong socket type from 10.0.0.3<51234> (peer 2 != expected 1 "
     "-- peer connected to wrong NCCL socket), discarding peer connection\n"),
    # gloo's monitored barrier on rank 0, whose deadline passed before every rank answered
    ('collective-mismatch', 'straggler-rank',
     "RuntimeError: Rank 0 timed out in monitoredBarrier after 30000 ms.\nSuccessfully processed ranks: 1, 2\n"),
    # torch 2.3/2.4's heartbeat monitor on a store that is gone: alone, a side effect of what took it
    (N, 'rank-crash',
     '[rank1]:[E614 11:14:03.086670611 ProcessGroupNCCL.cpp:1319] [PG 0 Rank 1] Failed to get exception dump flag '
     'from the global store.Connection reset by peer\n'),
    # NCCL picked ib0's IPv6 link-local address and cannot bind it
    ('wrong-socket-interface', None,
     'nd20-01:275975:275975 [0] NCCL INFO Bootstrap : Using ib0:fe80::ba59:9f03:fc:765c%ib0<0>\n'
     'nd20-01:275975:275975 [0] misc/socket.cc:379 NCCL WARN Call to bind failed : Cannot assign requested '
     'address\n'),
    # TORCH_NCCL_BLOCKING_WAIT's wording of a collective timeout
    ('straggler-rank', 'collective-mismatch',
     '[rank1]:[E1002 18:16:40.662691402 ProcessGroupNCCL.cpp:756] [Rank 1] Work WorkNCCL(SeqNum=2521, '
     'OpType=ALLREDUCE, NumelIn=160672064, NumelOut=160672064, Timeout(ms)=600000) timed out in blocking wait.\n'),
    # torch 2.3+'s watchdog hang: alone, a side effect of what hung it
    (N, 'straggler-rank',
     '[rank7]:[E1019 01:04:03.357615073 ProcessGroupNCCL.cpp:1375] [PG 3 Rank 7] First PG on this rank that '
     'detected no heartbeat of its watchdog.\n'),
    # vLLM's pynccl wording of ncclInvalidUsage: alone, weakly two ranks on one GPU
    (N, 'missing-set-device', 'RuntimeError: NCCL error: invalid usage\n'),
    # NCCL's proxy lost the peer it was connecting to, or polling
    ('rank-crash', 'link-down',
     'node1:183006:183220 [1] proxy.cc:1119 NCCL WARN [Proxy Service 9] Failed to execute operation Connect from '
     'rank 9, retcode 6\n'),
    ('rank-crash', 'link-down',
     'node1:39964:40044 [0] proxy.cc:1143 NCCL WARN Socket recv failed while polling for opId=0x7f6f18cb7f40\n'),
    # Lightning 1.x's wording of its devices-versus-SLURM-tasks check
    ('world-size-mismatch', None, 'You requested 2 GPUs but launched 1 slurm tasks.\n'),
    # NCCL could not allocate device memory
    ('rank-crash', None, 'node1:3063028:3066152 [3] include/alloc.h:185 NCCL WARN Failed to CUDA calloc 6291456 bytes\n'),
    # UCX's signal handler (loaded with torch builds that link it) words a bus error its own way.
    ('shm-exhausted', 'rank-crash',
     '[node1:3039 :0:3095] Caught signal 7 (Bus error: nonexistent physical address)\n'
     '==== backtrace (tid:   3095) ====\n'
     ' 2 0x000000000007587d ncclGroupEnd()  ???:0\n'),
    # A store address on docker's default bridge (172.17.0.x) reaches no other host: the address was
    # taken from a container's interface.
    ('wrong-socket-interface', 'wrong-master-addr',
     '(Worker pid=2079, ip=10.0.1.75) [E socket.cpp:922] [c10d] The client socket has timed out after '
     '1800s while trying to connect to (172.17.0.2, 44737).\n'),
    ('firewall', None,
     '[E socket.cpp:922] [c10d] The client socket has timed out after 1800s while trying to connect to '
     '(172.17.8.21, 44737).\n'),
    # Windows sockets number a refusal 10061 and word a failed lookup their own way.
    ('wrong-master-port', 'firewall',
     'torch.distributed.DistNetworkError: The client socket has failed to connect to [10.0.0.2]:29500 (system '
     'error: 10061 - No connection could be made because the target machine actively refused it.).\n'),
    ('wrong-master-addr', None,
     '[W socket.cpp:697] [c10d] The client socket has failed to connect to [gpu01]:29500 (system error: 11001 - '
     'No such host is known.).\n'),
    # NCCL's socket transport got a bigger message than it posted for: collectives of different sizes.
    ('collective-mismatch', None,
     'node2:342239:342260 [0] transport/net_socket.cc:424 NCCL WARN NET/Socket : peer 192.168.161.30<59210> '
     'message truncated : receiving 1048576 bytes instead of 65536\n'),
    # srun reports a task the kernel killed (the OOM killer's SIGKILL) in its own words.
    ('rank-crash', None, 'srun: error: node3: task 2: Killed\nsrun: Terminating StepId=4242.0\n'),
    # Open MPI's report from inside a rank that crashed, under mpirun --tag-output; and mpirun's own.
    ('rank-crash', None,
     '[1,50]<stderr>:[node7:21766] *** Process received signal ***\n'
     '[1,50]<stderr>:[node7:21766] Signal: Segmentation fault (11)\n'
     '[1,50]<stderr>:[node7:21766] Signal code: Address not mapped (1)\n'),
    ('rank-crash', None,
     'mpirun noticed that process rank 3 with PID 0 on node node2 exited on signal 11 (Segmentation fault).\n'),
    # UCX's handler inside a crashing task, and srun's word for it.
    ('rank-crash', None,
     '640: [nid007306:244443:0:244443] Caught signal 11 (Segmentation fault: address not mapped to object at '
     'address 0x455)\n'),
    ('rank-crash', None, 'srun: error: nid007306: task 640: Segmentation fault\nsrun: Terminating StepId=348680.1\n'),
    # The NIC's driver, pasted from dmesg: the link itself went down.
    ('link-down', None,
     '[Fri Mar  1 10:00:00 2024] mlx5_core 0000:5e:00.0 enp94s0f0np0: Link down\n'
     '[rank5]:[E ProcessGroupNCCL.cpp:1182] [Rank 5] Watchdog caught collective operation timeout: '
     'WorkNCCL(SeqNum=88, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600431 '
     'milliseconds before timing out.\n'),
    # Horovod's coordinator compares the ranks' requests before the collective.
    ('collective-mismatch', None,
     'horovod.common.exceptions.HorovodInternalError: Mismatched ALLREDUCE tensor shapes: One rank sent a '
     'tensor of shape [10], but another rank sent a tensor of shape [20].\n'),
    # mpirun, SLURM, Ray and Horovod report a lost or stopped rank in their own words.
    ('rank-crash', None, 'mpirun noticed that process rank 7 with PID 0 on node gpu3 exited on signal 9 (Killed).\n'),
    ('rank-crash', 'link-down',
     '2024-04-11 16:38:16,464\tWARNING worker.py:2037 -- The node with node id: 75b2eec8 and ip: 10.4.4.107 has '
     'been marked dead because the detector has missed too many heartbeats from it.\n'),
    ('collective-mismatch', 'straggler-rank',
     '[2021-04-10 21:28:20.658706: W horovod/common/stall_inspector.cc:105] One or more tensors were submitted to '
     'be reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks for more than '
     '60 seconds.\n'),
    # The port's own status, as ibstat shows it.
    ('link-down', None,
     'link mlx5_7/1 subnet_prefix fe80:0000:0000:0000 lid 3403 sm_lid 1 lmc 0 state DOWN physical_state POLLING\n'),
    # torch 1.x's wording of a collective timeout, and the store's later "workers" wording.
    ('straggler-rank', 'collective-mismatch',
     'RuntimeError: [Rank 1] Caught collective operation timeout: WorkNCCL(SeqNum=6, OpType=ALLREDUCE, '
     'TensorShape=[1], Timeout(ms)=10800000) ran for 10800863 milliseconds before timing out.\n'),
    ('wrong-master-port', 'wrong-master-addr',
     'torch.distributed.DistStoreError: Timed out after 6 seconds waiting for workers. 1/2 workers joined.\n'),
    # The libuv store's listen failure with another code than EADDRINUSE's, or a code a paste cut short.
    ('port-in-use', None,
     'RuntimeError: The server socket has failed to listen on any local network address. port: 46571, '
     'useIpv6: 0, code: -9\n'),
    ('port-in-use', None,
     'torch.distributed.DistNetworkError: The server socket has failed to listen on any local network '
     'address. port: 80, useIpv6: 0, code: -13, name: EACCES, message: permission denied\n'),
    # The store's bind failure with its reason cut off, as a note or a paste kept it.
    ('port-in-use', None,
     'The server socket has failed to listen on any local network address\n\n'
     'The server socket has failed to bind to [::]:19936\n'),
    # Wordings as torch, gloo and NCCL's sources write them (their later versions).
    ('collective-mismatch', None,
     'RuntimeError: Detected mismatch between collectives on ranks. Collectives differ in the following aspects: '
     '  Sequence number: 22vs 18  Op type: ALLREDUCEvs ALLGATHER\n'),
    ('collective-mismatch', None,
     "RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:534] Received data size doesn't match "
     "expected size. Is there a distributed collective mismatch in your code? GLHF!\n"),
    ('wrong-socket-interface', 'firewall',
     'node1:2683:2826 [0] misc/socket.cc:611 NCCL WARN socketStartConnect: exceeded retries (34)\n'),
    ('wrong-socket-interface', None,
     '[W ProcessGroupGloo.cpp:715] Warning: Unable to resolve hostname to a (local) address. Using the loopback '
     'address as fallback. Manually set the network interface to bind to with GLOO_SOCKET_IFNAME.\n'
     'RuntimeError: Cannot resolve node1 to a (local) address\n'),
    # HCCL, the collective library of torch_npu (Ascend NPUs), words the same failures its own way.
    ('wrong-socket-interface', None,
     '[ERROR] HCCL(925892,alltoall_test):2025-10-28-16:34:59.634.432 [sal.cc:501] [925892][InitGroupStage][EnvConfig]'
     'set ifname to [abc] by HCCL_SOCKET_IFNAME, but not found in the environment, ifnames in the environment is as '
     'follows\n'),
    ('port-in-use', None,
     '[PID: 2267203] 2025-11-21-11:38:29.575.404 Bind_Failed(EJ0003): Failed to bind the IP port. Reason: The IP '
     'address and port have been bound already.\n'),
    ('port-in-use', None,
     '[ERROR] HCCL(1009464,all_reduce_test):2000-03-15-00:41:48.470.172 [hccl_socket.cc:110] [1009464][InitGroupStage]'
     '[RanktableDetect] socket type[0], listen on ip[192.168.2.199] and specific port[16666] fail. Please check the '
     'port status and whether the port is being used by other process.\n'),
    ('collective-mismatch', None,
     '[ERROR] HCCL(3743927,all_reduce_test):2025-10-25-16:11:16.831.640 [rank_consistentcy_checker.cc:429] [3743951]'
     '[InitChannelStage][ParameterConflict]CMD information tag check fail. local[AllGather_127.10.0.1%enp_60000_0_'
     '1761379874757928], remote[AllReduce_127.10.0.1%enp_60000_0_1761379874757928]\n'),
    ('straggler-rank', None, 'RuntimeError: The inner error: Socket Timeout\n'),
    # Megatron's parallel state (and vLLM's copy) set up a second time in one process.
    ('missing-destroy-process-group', None, 'AssertionError: data parallel group is already initialized\n'),
    # SGLang's barrier after loading the model.
    ('straggler-rank', None,
     "RuntimeError: TP rank 0 could finish the model loading, but there are other ranks that didn't\n"),
    # A GPU kernel's on-chip shared memory is not /dev/shm.
    (N, None,
     "[TensorRT-LLM][WARNING] Force using MultiBlockMode in MMHA as shared memory is not enough, MultiBlockMode "
     "may have different accuracy compared to non-MultiBlockMode.\n"),
    # A summary line that capitalizes CUDA's wording.
    ('too-few-gpus', 'rank-as-device-id', 'CUDA Invalid device ordinal in trainer.py:195\n'),
    # A serving engine's own check of /dev/shm.
    ('shm-exhausted', None,
     '[2025-03-10 20:26:36.604+08:00] [324] [325] [mindie-server] [ERROR] [share_memory.cpp:172] : [MIE04E120407] '
     '[model_backend] Shared memory available is not enough on the filesystem.\n'),
    # Other vendors' words for a host without the backend's devices: ROCm's hipified torch and RCCL, Intel's
    # XPUs, and the frameworks' own checks (Lightning, accelerate, detectron2).
    ('nccl-without-gpu', None, 'RuntimeError: No HIP GPUs are available\n'),
    ('nccl-without-gpu', None, 'RuntimeError: No XPU devices are available.\n'),
    ('nccl-without-gpu', None,
     "mi300-n01:51234:51234 [0] /opt/rccl/src/init.cc:1934 NCCL WARN HIP failure 'no ROCm-capable device is "
     "detected' at /opt/rccl/src/init.cc:1934\n"),
    ('nccl-without-gpu', None,
     'lightning.fabric.utilities.exceptions.MisconfigurationException: GPUs requested but none are available.\n'),
    ('nccl-without-gpu', None, 'ValueError: Your assigned backend nccl is not avaliable, please use gloo\n'),
    ('nccl-without-gpu', None, 'AssertionError: cuda is not available. Please check your installation.\n'),
    # More processes than devices, as Intel's XPUs, Habana's Gaudis, fairseq and vLLM's Ray executor say it.
    ('too-few-gpus', None, 'RuntimeError: device is out of range, device is 4, total number of device is 4.\n'),
    ('too-few-gpus', None, 'AssertionError: world size is 8 but have 4 available devices\n'),
    ('too-few-gpus', None,
     'AssertionError: There is not enough devices available for training. Please verify if '
     'HABANA_VISIBLE_MODULES is set correctly.\n'),
    ('too-few-gpus', None,
     'RuntimeError: Not enough available modules for world_size=8. Set HABANA_VISIBLE_MODULES to include more '
     'available modules and try again.\n'),
    ('too-few-gpus', None,
     'ValueError: The number of required GPUs exceeds the total number of available GPUs in the placement group. '
     'Required number of devices: 8. Total number of devices: 4.\n'),
    # Lightning refuses one GPU listed twice (--gpus "0,0"): two replicas wanted on one device.
    ('too-few-gpus', 'missing-set-device',
     "lightning.fabric.utilities.exceptions.MisconfigurationException: Device ID's (GPU) must be unique.\n"),
    # A launcher variable missing, in the frameworks' own words (mmengine, composer, Lightning's LSF, accelerate).
    ('no-launcher', None, "KeyError: 'The environment variable MASTER_ADDR is not set'\n"),
    ('no-launcher', None,
     'composer.utils.dist.MissingEnvironmentError: Torch distributed is initialized but environment variable '
     'LOCAL_RANK is not set.\n'),
    ('no-launcher', None,
     'ValueError: Cannot determine world size. Environment variable `JSM_NAMESPACE_SIZE` not found.Make sure you '
     'run your executable with `jsrun`.\n'),
    ('no-launcher', None,
     "ValueError: Tried to launch on distributed with multinode, but `MASTER_ADDR` env was not set, please try "
     "exporting rank 0's hostname as `MASTER_ADDR`\n"),
    # Any other variable missing is not the launcher's.
    (N, None, 'UserWarning: The environment variable CUDA_HOME is not set\n'),
    # transformers and Lightning notice a script that no launcher started; accelerate's state printout of a
    # script started with plain python (HF's example scripts log it). Runs meant for one process print them too.
    (N, 'no-launcher',
     'torch.distributed process group is initialized, but parallel_mode != ParallelMode.DISTRIBUTED. In order to '
     'use Torch DDP, launch your script with `python -m torch.distributed.launch\n'),
    (N, 'no-launcher',
     'PossibleUserWarning: The `srun` command is available on your system but is not used. HINT: If your intention '
     'is to run Lightning on SLURM, prepend your python command with `srun` like so: srun python train.py\n'),
    (N, 'no-launcher',
     'Distributed environment: NO\nNum processes: 1\nProcess index: 0\nLocal process index: 0\nDevice: cuda\n'),
    (N, 'no-launcher', '06/01/2023 12:00:00 - INFO - __main__ - Distributed environment: NO\n'),
    # mmengine's and mmcv's init_dist given the launcher "none" (`--launcher none`: plain python) by a script
    # that goes distributed anyway.
    ('no-launcher', None, "ValueError: Invalid launcher type: none\n"),
    ('no-launcher', None, "ValueError: Invalid launcher type: None\n"),  # launcher=None in Python
    (N, None, "ValueError: Invalid launcher type: pytroch\n"),
    # A TensorRT-LLM engine built for two ranks run in one process (plain python, no mpirun), or in three.
    ('no-launcher', None, 'AssertionError: Engine world size (2) != Runtime world size (1)\n'),
    ('world-size-mismatch', None, 'AssertionError: Engine world size (4) != Runtime world size (2)\n'),
    # MoCo's main_worker (and its forks') refusal to run outside its own distributed mode.
    (N, 'no-launcher', 'NotImplementedError: Only DistributedDataParallel is supported.\n'),
    # The launcher's world and torch's, or the scheduler's tasks and the trainer's, disagree.
    ('world-size-mismatch', None,
     'RuntimeError: Torch distributed has been initialized with a value of 8 for world size, but environment '
     'variable WORLD_SIZE has value 4.\n'),
    ('world-size-mismatch', None, 'AssertionError: MPI world size 8 does not match torch world size 4\n'),
    ('world-size-mismatch', None,
     'AssertionError: SLURM --ntasks-per-node must match number of pipelines per node (=2)\n'),
    # HCCL's (Ascend) name for NCCL's remote error.
    ('rank-crash', 'link-down',
     'RuntimeError: HCCL error: HCCL_E_REMOTE: A call failed possibly due to a network error or a remote process '
     'exiting prematurely.\n'),
    # No interface to talk on: Horovod's task-to-task check, and oneCCL's own lookup.
    ('wrong-socket-interface', 'firewall',
     "Exception: Unable to find a set of common task-to-task communication interfaces: [(0, {'eth0': "
     "[('10.0.0.5', 34588)]}), (1, {'ib0': [('10.1.0.6', 34590)]})]\n"),
    ('wrong-socket-interface', None, 'ValueError: No interface is found for address 127.0.0.1.\n'),
    ('wrong-socket-interface', None,
     '2025:02:17-17:20:51:( 2399) |CCL_ERROR| internal_kvs.cpp:289 fill_local_host_ip: can\'t find interface ib0 '
     'to get host IP\n'),
    # The store client timed out: torch's newer retry line names the remote host; a line cut after the duration;
    # oneCCL's key-value store.
    ('firewall', 'wrong-master-addr',
     '[E1204 10:32:11.654321 TCPStore.cpp:331] [c10d] TCP client failed to connect/validate to host '
     '192.168.1.20:29500 - timed out (try=41, timeout=1800000ms): Connection timed\n'),
    ('firewall', 'wrong-master-addr', '[E108 20:04:34.467642512 socket.cpp:957] [c10d] The client socket has timed out after 900s whi\n'),
    ('firewall', 'wrong-master-addr',
     '2025:03:02-10:13:14:(41822) |CCL_ERROR| internal_kvs.cpp:517 kvs_init: connection time (120) >= limit (120)\n'),
    # torch's elastic store, its retries of a taken port spent.
    ('port-in-use', None, 'RuntimeError: on localhost, port: 29500 already in use\n'),
    # A collective that timed out on Intel's XPUs; Horovod's stall check giving up.
    ('straggler-rank', None, 'RuntimeError: Work ran time out after 1800012 milliseconds.\n'),
    ('collective-mismatch', 'straggler-rank',
     'One or more rank (marked by "!") is stalled for longer than 600 seconds. Will shutdown.\n'),
    # SageMaker's model-parallel library counts its processes against the devices.
    ('too-few-gpus', None,
     '[1,2]<stderr>:RuntimeError: The number of node-local MPI processes 8cannot be larger than the device count 4\n'),
    # A trace cut inside torch's set_device, before its error line.
    ('too-few-gpus', 'rank-as-device-id',
     '[rank6]:   File "/workspace/pypacks/accelerate/state.py", line 790, in set_device\n'
     '[rank6]:     torch.cuda.set_device(self.device)\n'
     '[rank6]:   File "/workspace/pypacks/torch/cuda/__init__.py", line 399, in set_device\n'
     '[rank6]:     torch._\n'),
    # The libuv store's listen failure cut before the code's name: EADDRINUSE on Linux and on Windows.
    ('port-in-use', 'shared-master-port',
     'torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. '
     'port: 35191, useIpv6: false, code: -98\n'),
    ('port-in-use', 'shared-master-port',
     'RuntimeError: The server socket has failed to listen on any local network address. port: 29500, useIpv6: '
     'false, code: -4091\n'),
    ('port-in-use', 'shared-master-port',  # macOS
     'torch.distributed.DistNetworkError: The server socket has failed to bind. port: 29500, useIpv6: 0, code: -48\n'),
    # torch 1.x's connect timeout, quoted without its period.
    ('firewall', 'wrong-master-addr', 'RuntimeError: connect() timed out\n'),
    # The watchdog's timeout as people quote it: without "Watchdog caught", its duration on a line of its own.
    ('straggler-rank', 'collective-mismatch', 'WorkNCCL(... OpType=ALLREDUCE, NumelIn=1 ...) ran for 600058 ms\n'),
    ('straggler-rank', 'collective-mismatch',
     'WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000)\n'
     '  ran for 721595 milliseconds before timing out\n'),
    # NCCL >= 2.27's socket calls (ncclOsSocket*), its retries spent: NCCL's own connection, not the store's.
    ('wrong-socket-interface', 'firewall',
     'torch.distributed.DistBackendError: NCCL error ...\n'
     'ncclOsSocketPollConnect: connect to <self> ... Connection refused,\n'
     'exceeded error retry count after 35 attempts\n'),
    # NCCL's return codes traced through its bootstrap, the warning that named the call not kept.
    ('wrong-socket-interface', 'firewall',
     'node1:2330:2658 [2] NCCL INFO misc/socket.cc:567 -> 2\n'
     'node1:2330:2658 [2] NCCL INFO bootstrap.cc:270 -> 2\n'),
    # gloo's check of a message longer than the receive posted, before and after its buffers took offsets.
    ('collective-mismatch', None,
     "terminate called after throwing an instance of 'gloo::EnforceNotMet'\n"
     '  what():  [enforce fail at ../third_party/gloo/gloo/transport/tcp/pair.cc:446] op.preamble.length <= '
     'op.nbytes. 256000 vs 128000\n'),
    ('collective-mismatch', None,
     '[enforce fail at gloo/transport/tcp/pair.cc:510] op.preamble.roffset + op.preamble.length <= '
     'op.buf->size_. 8192 vs 4096\n'),
    # Two ranks on one device, as HCCL (Ascend) and a torch build's own check word it.
    ('missing-set-device', 'too-few-gpus',
     'Communication_Error_Ranktable_Detect(EI0015):\n'
     'Rank0 ... has the same physical device ID0 as rank1.\n'),
    ('missing-set-device', 'too-few-gpus',
     'Rank 0 of node 10.0.0.1 has the same physical device ID 0 as the rank 1\n'),
    ('too-few-gpus', 'missing-set-device',
     'RuntimeError: Duplicated GPU device is not allowed by NCCL. Rank [0] and rank [8] both attached to GPU '
     'device 0 on the same host node1. Most likely your world_size is larger than the total number of GPUs\n'),
    # A process that neither runs nor dies: the kernel's hung-task report, ps's D state, /proc's status.
    ('frozen-rank', 'straggler-rank',
     '[Mon Jan  1 00:00:00 2024] INFO: task python:4123 blocked for more than 120 seconds.\n'),
    ('frozen-rank', 'straggler-rank',
     ' PID  STAT WCHAN                    ELAPSED      COMMAND\n'
     '1533  DNl  nfs_start_io_read      1-22:05:51 python train.py\n'),
    ('frozen-rank', 'straggler-rank', 'Name:\tpython\nState:\tT (stopped)\n'),
    ('frozen-rank', 'straggler-rank', 'Name:\tpython\nState:\tt (tracing stop)\n'),
    # A port found taken, and another taken at once by the program itself: the run went on.
    (N, None,
     'ERROR 12-01 10:00:00 [utils.py:211] Address already in use. Retrying with a new port.\n'
     'ERROR Port 29500 is already in use. Binding to a random available port instead.\n'
     'WARNING Port 8000 is already in use, trying port 8001\n'),
    # Warnings of a run that goes on: a variable defaulted, a Ray cluster larger than its head node.
    (N, None, "WARNING WORLD_SIZE environment variable not set, defaulting to 1.\n"),
    (N, None, 'WARNING 06-01 10:00:00 ray_utils.py:300] Tensor parallel size (16) exceeds available GPUs (8). '
              'This may result in Ray placement group allocation failures.\n'),
    # vLLM's executors, old and new, and torchtitan: more ranks than the node's GPUs, in their own words.
    ('too-few-gpus', None,
     '    assert world_size <= cuda_device_count_stateless(), (\n'
     'AssertionError: please set tensor_parallel_size (4) to less than max local gpu count (2)\n'),
    ('too-few-gpus', None,
     'ValueError: World size (8) is larger than the number of available GPUs (4) in this node. If this is '
     "intentional and you are using: - ray, set '--distributed-executor-backend ray'.\n"),
    ('too-few-gpus', None,
     '[rank5]: ValueError: LOCAL_RANK=5 is outside the visible cuda device count (4).\n'),
    # Megatron-Core's and torchtitan's own checks for a launcher's variables.
    ('no-launcher', None,
     'RuntimeError: Cannot determine world size: WORLD_SIZE environment variable not set and torch.distributed '
     'is not initialized.\n'),
    ('no-launcher', None,
     'ValueError: LOCAL_RANK must be set before selecting a local device.\n'),
    # The same in CuPy's Device.use (NCCL code built on CuPy picks its GPU there).
    ('too-few-gpus', 'rank-as-device-id',
     '  File "/home/user/train/comm/nccl_backend.py", line 31, in __init__\n'
     '    cupy.cuda.Device(cuda_id).use()\n'
     '  File "cupy/cuda/device.pyx", line 196, in cupy.cuda.device.Device.use\n'
     '  File "cupy/cuda/device.pyx", line 222, in cupy.cuda.device.Device.use\n'),
]


@pytest.mark.parametrize("first, also, text", CASES, ids=[text.splitlines()[-1][:60] for _, _, text in CASES])
def test_each_wording_reads_as_its_meaning(tmp_path, first, also, text):
    (tmp_path / "job.log").write_text(text)
    found = diagnose.diagnose([tmp_path / "job.log"])
    answers = found.answers()
    assert answers[0] == first, (answers, found.reasons)
    assert also is None or also in answers[:3], answers
    assert not found.causes or found.causes[0].confidence < 0.96


@pytest.mark.parametrize("text", [
    "node1:123:456 [0] init.cc:500 NCCL WARN Mismatched NCCL git versions detected: rank 0 fingerprint 0x1a2b, "
    "rank 4 fingerprint 0x3c4d\n",
    "node1:123:456 [0] init.cc:500 NCCL WARN NCCL version mismatch with remote peer node2 (local: 2.27.3, remote "
    "2.21.5)\n",
])
def test_nccl_versions_that_differ_across_ranks_are_named_outside_the_catalog(tmp_path, text):
    (tmp_path / "job.log").write_text(text)
    found = diagnose.diagnose([tmp_path / "job.log"])
    assert found.answers() == (N,) and found.outside == ("nccl-version-skew",), (found.answers(), found.outside)
