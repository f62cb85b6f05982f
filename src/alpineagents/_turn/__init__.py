"""The turn machinery: a run from its checks to its end, the step sequences of think, use_tools, compact and ask, the sync and async drivers that perform them, and the run context."""
