"""Chapter 6, exports: a trained model in other engines' formats (the command is
seq2seq/export.py).

    ctranslate2.py   a CTranslate2 model, and the engine that decodes with it
    cached.py        which engine decodes: by default CTranslate2 on an export cached beside
                     the checkpoint (translate, serve)
    argos.py         an Argos Translate package, for LibreTranslate
    huggingface.py   a Hugging Face transformers folder (Pegasus + MarianTokenizer)
    model_card.py    what an exported model says about itself: data, sizes, scores

May import: the model, text, decoding, the config, support.
"""
