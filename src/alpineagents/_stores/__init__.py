"""Inside the built-in stores: the file store's disk work (`files`), the SQLite store (`sqlite`), the one-writer-per-
State locks (`locks`), the checks of a write batch (`batch`), the JSON lines every store keeps (`lines`) and what
makes saved data damaged (`damage`). The public face is `alpineagents.store`."""
