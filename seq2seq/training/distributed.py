"""Data-parallel training under torchrun: the same `seq2seq.train`, in N processes.

    torchrun --nproc_per_node=2 -m seq2seq.train [--config config.yaml] [key.sub=value ...]

torchrun starts N processes and tells each its rank (RANK, WORLD_SIZE, LOCAL_RANK in the
environment). Each process holds a replica of the model; each step, each reads its own share
of the step's micro-batches (seq2seq/tokens/batching.py: shard_steps), computes gradients, and
DistributedDataParallel averages them across processes before the optimizer step, so every
replica stays identical. NCCL carries the gradients between GPUs, gloo between CPU processes.
The few numbers the processes agree on outside the model (the step's target count, whether a
signal arrived, which checkpoint is best) always travel over gloo, between host memory: a GPU
collective read back with .item() or .tolist() would make the host wait for the GPU.

Started without torchrun (no RANK in the environment), nothing here touches
torch.distributed: the `World` is one process of rank 0.
"""

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

from seq2seq.support.device import pick_device
from seq2seq.support.errors import UserError


@dataclass(frozen=True)
class World:
    rank: int = 0  # this process, 0 .. size-1
    size: int = 1  # how many processes train together
    local_rank: int = 0  # this process on its machine (its GPU)
    host_group: object = None  # gloo group for host-side values (None: the default group)

    @property
    def main(self) -> bool:
        """Rank 0 alone writes files, logs and draws the progress bar."""
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.size > 1


def start(device_name: str) -> tuple[World, torch.device]:
    """The world of this process and its device; joins the process group under torchrun."""
    if "RANK" not in os.environ:
        return World(), pick_device(device_name)
    rank, size, local_rank = (int(os.environ[k]) for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK"))
    device = pick_device(device_name)
    if device.type == "cuda":  # one GPU per process
        check_gpu_count(int(os.environ.get("LOCAL_WORLD_SIZE", local_rank + 1)))
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    host_group = dist.new_group(backend="gloo") if device.type == "cuda" else None
    return World(rank, size, local_rank, host_group), device


def check_gpu_count(processes_here: int) -> None:
    """Each process of this machine needs a GPU of its own."""
    gpus = torch.cuda.device_count()
    if processes_here > gpus:
        raise UserError(
            f"torchrun started {processes_here} processes on this machine, which has {gpus} "
            f"GPU(s): start one per GPU (make train-ddp NPROC={gpus}, or torchrun "
            f"--nproc_per_node={gpus}), or train on the CPU with train.device=cpu"
        )


def stop(world: World) -> None:
    if world.distributed and dist.is_initialized():
        dist.destroy_process_group()


def sum_over_processes(values: list[float], world: World) -> list[float]:
    """Element-wise sums of `values` over all processes (the values themselves if alone)."""
    if not world.distributed:
        return values
    tensor = torch.tensor(values, dtype=torch.float64)
    dist.all_reduce(tensor, group=world.host_group)
    return tensor.tolist()


def from_main(value, world: World):
    """Rank 0's `value`, on every process: decisions are made once, then shared."""
    if not world.distributed:
        return value
    box = [value]
    dist.broadcast_object_list(box, src=0, group=world.host_group)
    return box[0]


def gather(value, world: World) -> list:
    """[value of rank 0, value of rank 1, ...] on every process."""
    if not world.distributed:
        return [value]
    values = [None] * world.size
    dist.all_gather_object(values, value, group=world.host_group)
    return values


def sum_on_device(tensor: torch.Tensor, world: World) -> torch.Tensor:
    """The sum of `tensor` over all processes, in place on its device. Under NCCL the host
    goes on at once: the sum is queued on the GPU like any other kernel."""
    if world.distributed:
        dist.all_reduce(tensor)
    return tensor
