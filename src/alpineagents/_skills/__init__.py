"""Skills in the open Agent Skills format: reading skill folders, and what the model gets of them."""
