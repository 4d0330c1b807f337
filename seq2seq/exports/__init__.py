"""Chapter 7, exports: a trained model in other engines' formats (the command is
seq2seq/export.py), and back (seq2seq/import_model.py).

    ctranslate2.py   a CTranslate2 model (which seq2seq/decoding/ctranslate2_engine.py decodes)
    vocab_map.py     its vocabulary map (decode.vmap): target pieces each source piece may give,
                     from the training pairs, or your catalogs for any model (vmap_catalogs)
    argos.py         an Argos Translate package, for LibreTranslate
    argos_package.py an Argos package's layout: the one module that knows it (read and written)
    huggingface.py   a Hugging Face transformers folder (Pegasus + MarianTokenizer)
    model_card.py    what an exported model says about itself: data, sizes, scores
    ctranslate2_reader.py  a CTranslate2 model's folder read back, weights dequantized
    layer_names.py   our model's weights by name: the one table every export and the import walk
    importing.py     an Argos package or CTranslate2 model as a checkpoint of ours
    imported_vocab.py  its vocabularies in our order, its tokenizer (sentencepiece, BPE) to match

May import: the checkpoint, the model, the text chapters, the config, support (decoding
imports exports: its engine choice caches a CTranslate2 export).
"""
