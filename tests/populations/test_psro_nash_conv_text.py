"""PSRO's log lines show a float-error NashConv below 0 (an exact equilibrium, e.g.
examples/openspiel_game high_card) as 0, not ``-0.00000``; the stored value is unchanged."""

import logging

import pytest

from populations.psro import PSRO, ExactBestResponse, nash_conv_text

RPS = "openspiel/matrix_rps"


@pytest.mark.parametrize(("value", "digits", "text"), [
    (None, 5, "n/a"),
    (-1e-17, 5, "0.00000"),
    (-9e-13, 6, "0.000000"),
    (3e-13, 5, "0.00000"),
    (-2e-12, 12, "-0.000000000002"),  # only float error is hidden
    (-0.25, 5, "-0.25000"),
    (0.123456, 5, "0.12346"),
])
def test_nash_conv_text(value, digits, text):
    assert nash_conv_text(value, digits) == text


def test_the_psro_iteration_line_shows_a_tiny_negative_as_zero(monkeypatch, caplog):
    monkeypatch.setattr(PSRO, "nash_conv", lambda self: -1e-17)
    psro = PSRO(RPS, ExactBestResponse(RPS))
    with caplog.at_level(logging.INFO, logger="populations.psro"):
        result = psro.iteration()
    line = next(r.getMessage() for r in caplog.records if "PSRO iteration" in r.getMessage())
    assert "NashConv 0.000000," in line and "-0.0" not in line, line
    assert result.nash_conv == -1e-17  # display only
