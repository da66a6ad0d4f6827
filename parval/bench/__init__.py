"""`parval bench`: parval's own speed against the stand-in (figures, never timed assertions).

May import: api, judge, the runners and gates it times, and every layer below them."""
