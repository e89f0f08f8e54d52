"""The Dagster asset graph: one module per stage, asset checks beside the asset they check."""

# Who answers for every asset (shown in the UI; a team or an email, as Dagster accepts).
OWNERS = ["team:trajectory-pipeline"]
