"""`parval bench`: parval's own speed against the stand-in (figures, never timed assertions)."""
