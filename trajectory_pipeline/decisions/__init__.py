"""Decision points: one training example per assistant tool call of an accepted attempt (the
`decision_points` stage)."""
