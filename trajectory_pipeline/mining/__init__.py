"""Mining: task attempts out of raw sessions, their signals, tiers, workflow families, the canonical
tool vocabulary and shell-intent classification (the `mined_trajectories` stage)."""
