.venv/bin/pip install -e '.[docs]'   # mkdocs, mkdocs-material, mkdocstrings
.venv/bin/mkdocs serve               # then open http://127.0.0.1:8000/
