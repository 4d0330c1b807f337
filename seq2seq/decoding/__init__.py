"""Chapter 5, decoding: from a trained model to translations.

    greedy.py          greedy search, with and without the key/value cache: one batch
    beam.py            batched beam search with a length penalty
    repeats.py         no runaway outputs: the tokens that would repeat an n-gram
    batches.py         many sentences: batches of similar length, greedy or beam search
    warnings.py        what to tell the user of a sentence: unknown words, a cut to fit
    attention_maps.py  the attention weights of one translation, for plots and the page
    engines.py         the one interface every translating command and the service use, our
                       torch engine, and translate_texts: texts in, translations out
    confidence.py      how sure a translation is: its signal, calibrated to the chance it is
                       acceptable, and the measures of how well that holds
    ctranslate2_engine.py  the CTranslate2 engine, on an export (seq2seq/exports/ctranslate2.py)
    argos_engine.py    an Argos Translate package as an engine, decoded as Argos decodes it
    argos_tokenizers.py  an Argos package's tokenizer: its sentencepiece.model, or its
                       bpe.model with Moses's tokenization, as Argos Translate uses them
    exported.py        a checkpoint's translations by CTranslate2 on its export, kept beside
                       it, its attention pictures by ours
    compute_types.py   the type CTranslate2 decodes the weights in: auto measures which
                       is fastest at float32's score, kept in the export
    threads.py         how a service's cores decode: batches at once x threads each,
                       measured on a checkpoint's validation sentences, kept in the export
    engine_choice.py   which engine decodes (--engine): by default the checkpoint's export
                       where CTranslate2 runs, else ours

May import: the checkpoint, exports, the model, the text chapters (tokens, localization,
text), the config, support. Never training or serving.
"""
