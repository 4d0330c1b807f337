"""Issue 53, a model of LibreTranslate's made better on your texts: the packages its import and
fine-tuning are measured on.

    locomotive.py   an English -> German Argos package made as LibreTranslate's Locomotive makes
                    them (OpenNMT-py 3.5.1 in its own venv), scaled to 2 CPU cores
"""
