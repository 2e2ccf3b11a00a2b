"""One base class of bad input, caught by both command lines (exit 2, one line)."""

from __future__ import annotations

import pytest

from analysis.loader import ResultsError
from contract.errors import BadInput
from contract.run_info import RunFileError
from harness.campaign.config_file import CampaignError
from harness.cli.main import main
from scenarios import ScenarioError
from targets.algorithms import PolicyError
from targets.config import ConfigError as TargetConfigError
from targets.stores.redis import RedisConfigError


@pytest.mark.parametrize("error", [PolicyError, ScenarioError, CampaignError, TargetConfigError, RedisConfigError,
                                   ResultsError, RunFileError])
def test_every_bad_input_error_is_one_class(error):
    assert issubclass(error, BadInput) and issubclass(error, ValueError)


def test_the_cli_catches_the_base_class(monkeypatch, capsys):
    """A bad-input error raised anywhere under a command is one line and exit 2, whatever its class."""
    class Novel(BadInput):
        pass

    def boom(args):
        raise Novel("--thing: cannot be used")

    import harness.cli.main as cli

    monkeypatch.setattr(cli, "cmd_list", boom)
    assert main(["list"]) == 2
    assert capsys.readouterr().err == "error: --thing: cannot be used\n"
