"""Inside the tools: input schemas and argument validation, docstring parsing, and the call scope of a running tool."""
