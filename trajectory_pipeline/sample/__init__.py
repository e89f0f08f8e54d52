"""The demo kit: a generated sample corpus and the bundled tiny model with its learned base. It
serves `make demo`, the tests and the benchmarks; no stage depends on it."""
