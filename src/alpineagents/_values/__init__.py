"""The values every layer passes around, below the State.

``content``: the content blocks and ``Message`` (``alpineagents.types`` re-exports them). ``construct``: how a value
class is declared (``@value``: frozen, slotted, every change refused) and the one fast way to build a value from its
fields (``maker``), which always gives the value its class would.
"""
