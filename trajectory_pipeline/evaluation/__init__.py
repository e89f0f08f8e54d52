"""Evaluation: replaying real decisions, reading answers, scoring them, the report and promotion
(the `replay_eval` stage)."""
