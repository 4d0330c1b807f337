"""Whole paths run end to end, each recorded pass or fail with its figures.

gpu_check.py       make gpu-check: every CUDA path on this machine's GPU, one after another
gpu_setup.py       what its checks share: the recipe, the sizes, the device, Skip
gpu_training.py    its training checks: batch sizes, precisions, nn.Transformer, resume
gpu_paths.py       its other paths: attention, torchrun, eval, serve, CTranslate2, pytest
install_sizes.py   make install-sizes: what each make target installs, in a new venv
recipes.py         make recipes: the Multi30k recipes' scores, into their pages
"""
