"""Progress displays of a running campaign: state, plain / JSON-lines / live."""
