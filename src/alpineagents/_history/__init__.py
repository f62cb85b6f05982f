"""The State's history and what is computed from it: the fold, replaying a saved history, decoding saved entries, and the texts of the State's misuse errors."""
