"""Inside the built-in stores: the file store, the SQLite store, the one-writer-per-State locks and the checks of a write batch."""
