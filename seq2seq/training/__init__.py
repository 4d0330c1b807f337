"""Chapter 4, training: what the training loop (seq2seq/train.py) leans on.

    run.py          the parts of one run: data, model, optimizer, sampler, progress
    optimizer.py    AdamW and its learning-rate schedule (warmup, cosine decay)
    loss.py         the loss of a batch: cross-entropy with label smoothing
    validation.py   the valid split's loss, exact match and BLEU; which result is best
    memory.py       train.max_memory_mib: a trial step measured, more micro-batches to fit
    best_and_last.py  best.pt and last.pt: keeping the best, saving, resuming; divergence
    averaging.py    the last validations' checkpoints (step-<N>.pt) and their average
    finetune.py     a run that starts from a trained checkpoint's weights and vocabularies
    resume.py       what last.pt holds besides the weights; stopping on a signal
    distributed.py  data-parallel training under torchrun
    report.py       the progress bar and the loss / tokens-per-second lines
    metrics.py      exact match, token accuracy, BLEU and chrF of translations
    improvement.py  python -m seq2seq.improve's data: the corrections, held out and replayed,
                    and the fine-tuning config of a version
    gate.py         whether a version is served: its scores against the served and original
    versions.py     the versions kept, the one served (versions/current), rollback

May import: the model, the text chapters (corpora, tokens, localization, text), decoding
(validation and the gate translate), exports (validation by CTranslate2; the import's
fine-tuning schedule), the config, support.
"""
