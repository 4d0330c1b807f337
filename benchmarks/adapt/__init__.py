"""An imported model made better on its user's texts (issue 53's figures).

locomotive.py  an English -> German Argos package made as LibreTranslate's Locomotive makes
               them (OpenNMT-py 3.5.1 in its own venv), scaled to 2 CPU cores
synthetic.py   packages of random weights laid out as OpenNMT-py 3 and Marian write them,
               converted by CTranslate2's own converters (the tests' and laptop.py's)
laptop.py      make bench-adapt-laptop: fine-tuning a Transformer-base package on 2 CPU cores,
               its tokens/s and peak memory under each way of keeping what it knew
exactness.py   make bench-adapt-import: a real package imported, its outputs against
               CTranslate2's on the same package (float32 and int8)
target.py      make bench-adapt: that package fine-tuned on software catalogs, against itself
               and a model trained from scratch, each way of keeping what it knew
program.py     make bench-adapt's single-program case: the package fine-tuned on one program's
               catalog alone, each fine-tune alone and mixed with the package (WiSE-FT)
served.py      a fine-tuned model packaged and served by LibreTranslate and by ours, their
               answers compared (target.py's last step)
terms.py       make bench-terms: glossaries followed by the stand-in as it is and taught
               terms, with the right glossary, a random one and none
learn.py       make bench-learn: the service learning from corrections, replayed on a
               held-out program's catalog (memory, fuzzy matches, an improvement)
confidence.py  make bench-confidence: how sure a translation is, each signal tried against
               sentence chrF on captions, the held-out programs and a fine-tune's program
catalog_map.py make bench-catalog-map: the stand-in package with a vocabulary map made of the
               catalogs of programs other than the held-out ones, without and with it
tuning.py      what laptop.py and target.py share: a package imported into a work folder,
               its corpus encoded, each setting trained in a process of its own and measured
"""
