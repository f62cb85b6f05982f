"""The values every layer passes around, below the State: content blocks and Message, and the one way to build a frozen value from fields already in normal form."""
