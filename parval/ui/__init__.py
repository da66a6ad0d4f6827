"""Progress displays of a running campaign: state, plain / JSON-lines / live.

May import: server, plan and the foundation (it reads events, never the campaign)."""
