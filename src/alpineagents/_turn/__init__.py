"""The turn machinery: what runs between an Agent's public methods and the services they use.

- `seams`: what the machinery needs from an Agent (`AgentSeam`), the `DEFAULT` marker, the answer format of `ask`.
- `context`: the run context (which reporter, human, store and permissions apply) and how a subagent inherits it.
- `driver`: one driver that performs a step sequence for a sync method and for its async twin; the save points.
- `steps`: think, use_tools, compact and ask, each written once as a step sequence.
- `run`: a run from its checks to its end, and the warning when a loaded State is resumed by another Agent.
- `subagent`: the tool an Agent becomes in another Agent's `tools=`.
- `workers`: the daemon worker threads that run tool calls.
"""
