"""alpineagents: LLM agents whose loop is a plain Python function.

The root re-exports are filled in as the modules land (see the spec, §1 of each part).
"""
