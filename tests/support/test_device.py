"""Devices and precisions, including what a GPU would get, with CUDA's answers faked."""

import contextlib
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from seq2seq.support import device
from seq2seq.support.device import autocast_dtype, cpu_computes_bf16, pick_device
from seq2seq.support.errors import UserError
from seq2seq.training import distributed

from helpers import ROOT

CPU = torch.device("cpu")


def test_precision_choices_on_the_cpu():
    assert autocast_dtype("auto", CPU, "train.precision") is None  # fp32
    assert autocast_dtype("fp32", CPU, "train.precision") is None
    assert autocast_dtype("bf16", CPU, "train.precision") is torch.bfloat16
    with pytest.raises(UserError, match="decode.precision: fp16 needs a CUDA device"):
        autocast_dtype("fp16", CPU, "decode.precision")
    # training's auto on a CPU that computes bf16 natively; its fp32 stays fp32
    assert autocast_dtype("auto", CPU, "train.precision", cpu_bf16=True) is torch.bfloat16
    assert autocast_dtype("fp32", CPU, "train.precision", cpu_bf16=True) is None


@pytest.mark.parametrize(
    "flags, native",
    [
        ({"avx2", "avx512f", "avx512_bf16"}, True),  # AMD Zen 4, Intel Cooper Lake
        ({"avx2", "avx512f", "amx_bf16", "amx_tile"}, True),  # Intel Sapphire Rapids
        ({"avx2", "avx512f", "avx512_vnni"}, False),  # Intel Ice Lake: bf16 emulated
        ({"avx2", "fma"}, False),  # most laptops before 2022
        (set(), False),  # not Linux, or no flags to read
    ],
)
def test_training_picks_bf16_only_on_a_cpu_that_computes_it(flags, native):
    assert cpu_computes_bf16(flags) is native
    expected = torch.bfloat16 if native else None
    assert autocast_dtype("auto", CPU, "train.precision", cpu_computes_bf16(flags)) is expected


@pytest.fixture
def fake_gpus(monkeypatch):
    """Two fake GPUs; `asked` records of which device bf16 support was asked, and how."""
    asked = []
    current = [0]

    @contextlib.contextmanager
    def on(device):
        current[0] = torch.device(device).index
        yield

    def bf16_supported(including_emulation=True):
        asked.append((current[0], including_emulation))
        native = {0: True, 1: False}[current[0]]  # GPU 1 is a T4: bf16 emulated only
        return native or including_emulation

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "device", on)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", bf16_supported)
    return asked


def test_auto_precision_asks_the_chosen_gpu_for_native_bf16(fake_gpus):
    assert autocast_dtype("auto", torch.device("cuda", 0), "train.precision") is torch.bfloat16
    # a GPU whose bf16 is emulated gets fp16 (training adds the gradient scaler)
    assert autocast_dtype("auto", torch.device("cuda", 1), "train.precision") is torch.float16
    assert fake_gpus == [(0, False), (1, False)]
    assert autocast_dtype("fp16", torch.device("cuda", 1), "train.precision") is torch.float16


def test_a_gpu_that_is_not_there_is_a_clear_error(fake_gpus):
    with pytest.raises(UserError, match=r"device 'cuda:2' requested but this machine has 2 GPU"):
        pick_device("cuda:2")


def test_more_torchrun_processes_than_gpus_is_a_clear_error(fake_gpus, monkeypatch):
    distributed.check_gpu_count(2)  # one GPU each: fine
    with pytest.raises(UserError) as error:
        distributed.check_gpu_count(3)
    assert str(error.value) == (
        "torchrun started 3 processes on this machine, which has 2 GPU(s): start one per GPU "
        "(make train-ddp NPROC=2, or torchrun --nproc_per_node=2), or train on the CPU with "
        "train.device=cpu"
    )
    # what torchrun --nproc_per_node=3 sets for its third process
    env = {"RANK": "2", "WORLD_SIZE": "3", "LOCAL_RANK": "2", "LOCAL_WORLD_SIZE": "3"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(torch.cuda, "set_device", lambda device: pytest.fail("set_device"))
    with pytest.raises(UserError, match="torchrun started 3 processes"):
        distributed.start("auto")


def test_training_keeps_freed_blocks_up_to_the_size_asked(monkeypatch):
    """train.keep_freed_mib: glibc's trim and mmap thresholds (mallopt -1 and -3) in bytes;
    0 leaves glibc's defaults alone."""
    calls = []
    monkeypatch.setattr(device, "glibc", lambda name: lambda *args: calls.append((name, args)))
    device.keep_freed_memory(64)
    assert calls == [("mallopt", (-1, 64 << 20)), ("mallopt", (-3, 64 << 20))]
    calls.clear()
    device.keep_freed_memory(0)
    assert calls == []


def test_oneDNN_keeps_the_kernels_asked_unless_the_environment_says(monkeypatch):
    monkeypatch.delenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", raising=False)
    device.bound_onednn_kernels(16)
    assert os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] == "16"
    device.bound_onednn_kernels(64)  # the environment's (here: the first call's) wins
    assert os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] == "16"


def test_the_allocator_is_preloaded_once_and_a_missing_one_is_named(monkeypatch):
    """train.allocator: the library goes before what LD_PRELOAD held, and not twice; auto
    takes tcmalloc, else the mimalloc installed with seq2seq, else jemalloc; a named allocator
    that is not installed is an error naming how to install it."""
    installed = {"tcmalloc": "libtcmalloc_minimal.so.4", "mimalloc": "/site/libmimalloc.so",
                 "jemalloc": "libjemalloc.so.2"}  # fmt: skip
    monkeypatch.setattr(device, "find_allocator", lambda name: installed.get(name))
    environment = device.with_allocator("jemalloc", {"LD_PRELOAD": "libother.so"})
    assert environment["LD_PRELOAD"] == "libjemalloc.so.2 libother.so"
    assert device.with_allocator("jemalloc", environment) is None
    assert device.with_allocator("system", {}) is None
    assert device.with_allocator("auto", {})["LD_PRELOAD"] == "libtcmalloc_minimal.so.4"
    del installed["tcmalloc"]
    assert device.with_allocator("auto", {}) == {
        "LD_PRELOAD": "/site/libmimalloc.so",
        "MIMALLOC_PURGE_DELAY": "10000",
    }
    assert (
        device.with_allocator("auto", {"MIMALLOC_PURGE_DELAY": "0"})["MIMALLOC_PURGE_DELAY"] == "0"
    )
    monkeypatch.setenv("LD_PRELOAD", "/site/libmimalloc.so")
    assert device.allocator_line("auto") == (
        "memory allocator: mimalloc (train.allocator auto; tcmalloc not installed (apt install "
        "libtcmalloc-minimal4)), /site/libmimalloc.so"
    )
    installed.clear()
    assert device.with_allocator("auto", {}) is None  # glibc's own
    assert device.allocator_line("auto") == "memory allocator: glibc's (train.allocator auto)"
    with pytest.raises(UserError, match="train.allocator tcmalloc: .*apt install libtcmalloc"):
        device.allocator_library("tcmalloc")


def test_the_mimalloc_of_seq2seqs_install_is_found_where_pip_put_it():
    """pyproject.toml installs cmeel-mimalloc on Linux (x86-64, ARM): its library is found."""
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "aarch64"):
        pytest.skip("cmeel-mimalloc has wheels for Linux on x86-64 and ARM")
    library = device.find_allocator("mimalloc")
    assert library and Path(library).name == "libmimalloc.so" and Path(library).is_file()


@pytest.mark.slow
@pytest.mark.skipif(not device.allocator_library("auto")[1], reason="no allocator to preload")
def test_a_command_starts_again_with_the_allocator_loaded():
    """What the process maps once it has started itself again (Linux's /proc/self/maps)."""
    library = device.allocator_library("auto")[1]
    code = (
        "from seq2seq.support.device import start_with_allocator; start_with_allocator('auto');"
        "import sys, os; name = os.path.basename(sys.argv[1]);"
        "print(open('/proc/self/maps').read().count('/' + name) > 0)"
    )
    environment = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    result = subprocess.run(
        [sys.executable, "-c", code, library], capture_output=True, text=True, env=environment,
        cwd=ROOT, check=True,
    )  # fmt: skip
    assert result.stdout.strip() == "True", result.stderr
