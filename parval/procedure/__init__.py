"""The procedure as data: the assertion catalogue and the registry of how each ID is judged."""
