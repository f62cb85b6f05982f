"""Inside the tools: a function tool's parameters, input schema and argument validation (`schema`), its docstring
parser (`docstring`), the checks of its `exception_handler=` and `hints_for=` functions (`callbacks`), and the call
scope of a running tool (`scope`)."""
