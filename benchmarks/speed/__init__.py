"""How fast we train and decode, each figure against a baseline measured in the same run.

bench.py        make bench: training, decoding, the exported forms, the service, memory
training.py     our model against torch.nn.Transformer; training FLOP/s against a matmul's
exports.py      our translate() against CTranslate2, transformers and Argos Translate
train_speed.py  make bench-train: tokens/s under each CPU lever; --bleu-steps: their BLEU
validation.py   make bench-validation: a validation's seconds with each engine
scale.py        make bench-scale: the data path from 20,000 to 5,000,000 pairs
student.py      make bench-student: a teacher and its student, BLEU and sentences a CPU second
"""
