"""Where steps execute and how a backfill of days is cut into runs: chosen by settings when the
definitions load (assets/executors.py, assets/partitions.py). The Celery executor runs for real in
tests/test_distributed.py; Kubernetes is only checked here (deploy/k8s/README.md says what)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
import yaml

from assets import executors, partitions
from tests.conftest import REPO_ROOT
from trajectory_pipeline import settings


def test_in_process_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRAJECTORY_EXECUTOR", raising=False)
    assert executors.executor() is dg.in_process_executor


def test_multiprocess_forks_its_steps_from_a_fork_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAJECTORY_EXECUTOR", "multiprocess")
    chosen = executors.executor()
    assert chosen.name == "multiprocess"
    assert chosen.executor_creation_fn is dg.multiprocess_executor.executor_creation_fn
    # Steps are forked from a fork server that imported Dagster once, not spawned.
    resolved = chosen.config_schema.resolve_config({})
    assert resolved.success
    assert resolved.value["config"]["start_method"] == {"forkserver": {}}


def test_an_unknown_executor_names_the_choices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAJECTORY_EXECUTOR", "threads")
    with pytest.raises(settings.SettingError, match="in_process, multiprocess, celery, k8s"):
        executors.executor()


def test_celery_runs_on_the_broker_the_workers_read(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("dagster_celery", reason="dagster-celery is not installed (the celery extra)")
    monkeypatch.setenv("TRAJECTORY_EXECUTOR", "celery")
    monkeypatch.setenv("TRAJECTORY_CELERY_BROKER", "redis://broker.internal:6379/3")
    chosen = executors.executor()
    assert chosen.name == "celery"
    config = executors.celery_config()
    assert config["broker"] == config["backend"] == "redis://broker.internal:6379/3"
    assert config["config_source"]["task_acks_late"] is True
    # The workers' app is made from the same config: same broker, same queue.
    import importlib

    import assets.celery_worker as worker

    worker = importlib.reload(worker)
    assert worker.app.conf.broker_url == "redis://broker.internal:6379/3"
    assert [queue.name for queue in worker.app.conf.task_queues] == [executors.CELERY_QUEUE]


def test_k8s_is_dagster_k8s_job_executor(monkeypatch: pytest.MonkeyPatch) -> None:
    k8s = pytest.importorskip("dagster_k8s", reason="dagster-k8s is not installed (the k8s extra)")
    monkeypatch.setenv("TRAJECTORY_EXECUTOR", "k8s")
    assert executors.executor() is k8s.k8s_job_executor


def test_a_daily_backfill_is_one_run_or_runs_of_k_days(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(partitions, "DAYS_PER_RUN", None)
    assert partitions.daily_backfill_policy() == dg.BackfillPolicy.single_run()
    monkeypatch.setattr(partitions, "DAYS_PER_RUN", 7)
    assert partitions.daily_backfill_policy() == dg.BackfillPolicy.multi_run(max_partitions_per_run=7)


def test_the_helm_values_name_the_k8s_launcher_and_the_settings_they_need() -> None:
    """deploy/k8s/values.yaml: Kubernetes runs and steps, PostgreSQL, object storage, one image."""
    values = yaml.safe_load((REPO_ROOT / "deploy" / "k8s" / "values.yaml").read_text())
    assert values["runLauncher"]["type"] == "K8sRunLauncher"
    [deployment] = values["dagster-user-deployments"]["deployments"]
    env = {item["name"]: item.get("value") for item in deployment["env"]}
    assert env["TRAJECTORY_EXECUTOR"] == "k8s"
    assert env["TRAJECTORY_DATA_DIR"].startswith("s3://")
    assert deployment["dagsterApiGrpcArgs"] == ["-m", "assets.definitions"]
    assert values["postgresql"]["enabled"] is False and values["global"]["postgresqlSecretName"]


def test_the_k8s_launcher_settings_of_the_values_pass_dagster_k8s_schema() -> None:
    """The run launcher settings the chart passes on to dagster.yaml, checked against dagster-k8s's own
    schema for K8sRunLauncher (the chart renames runK8sConfig's keys to snake case; done here by hand)."""
    pytest.importorskip("dagster_k8s", reason="dagster-k8s is not installed (the k8s extra)")
    from dagster._config import process_config, resolve_to_config_type
    from dagster_k8s import K8sRunLauncher

    values = yaml.safe_load((REPO_ROOT / "deploy" / "k8s" / "values.yaml").read_text())
    launcher = values["runLauncher"]["config"]["k8sRunLauncher"]
    config = {
        "instance_config_map": "dagster-instance",
        "service_account_name": values["global"]["serviceAccountName"],
        "load_incluster_config": True,
        "env_vars": launcher["envVars"],
        "env_secrets": [secret["name"] for secret in launcher["envSecrets"]],
        "run_k8s_config": {"container_config": launcher["runK8sConfig"]["containerConfig"]},
    }
    result = process_config(resolve_to_config_type(K8sRunLauncher.config_type()), config)
    assert result.success, result.errors


def test_the_deploy_folder_documents_what_was_and_was_not_tested() -> None:
    text = Path(REPO_ROOT / "deploy" / "k8s" / "README.md").read_text()
    assert "Tested here" in text and "Not tested here" in text
