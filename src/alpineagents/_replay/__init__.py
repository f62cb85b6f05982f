"""Replaying stored runs: what a stored history says each request was and got (`recorded`), how a new request is
compared with a recorded one (`differences`), the `Replay` and `Recorder` models and the tools that serve recorded
results (`model`), cassette files, one State's history as JSON lines (`cassette`), and forks that name the model
to continue them (`fork`)."""
