"""The State's history and what is computed from it (the layer of ``alpineagents.state``).

- ``snapshot``: ``StateSnapshot``, the frozen value of a State, with the shared lists its history and messages live in;
- ``fold``: the fold (every rule of how an entry changes the values, written once), ``fold()`` and ``replay()``;
- ``recording``: the recording operations a State inherits (requests, replies, results, errors, stops, questions);
- ``construction``: the checks of ``State(...)`` and the entries it starts from;
- ``decode``: reading saved entries back (the one decoder; ``alpineagents._serial`` is the fixed module of the
  saved form and re-exports it);
- ``json_values``: plain deep copies of JSON values (extra data, answers, the saved form);
- ``closing``: how a call closed by an exception reads;
- ``misuse``, ``attributes``, ``ids``: the texts of the State's misuse errors, its attribute guard, and State ids;
- ``lines``: the lines of ``str(state)``;
- ``children``: the subagents each tool call started, and the usage they added.
"""
