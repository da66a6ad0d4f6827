"""A response body's canonical form and its comparison (the same code for the campaign that
records a canonical hash and the gates that compare them): volatile fields, plain PCM WAV,
the canonical hash, the planted mismatch of the negative control.

May import: the foundation only."""
