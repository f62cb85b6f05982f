"""The run viewer: a small web app that shows the runs of a store, and the same page as one offline HTML file.

`runs` reads runs from a store (it needs nothing outside the library, and the command line uses it for `ls`);
`timeline` turns a history into what the page shows; `charts` draws inline SVG; `page` renders the Jinja2
templates; `app` is the Starlette app. `page` and `app` need the `viewer` extra (`pip install -e '.[viewer]'` in the library's clone).
"""
