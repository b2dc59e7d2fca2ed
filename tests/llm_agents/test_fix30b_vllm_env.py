"""vLLM's servers listen on loopback unless the user says otherwise: a team built with the
``vllm`` backend sets ``VLLM_HOST_IP=127.0.0.1`` before vLLM is imported or its engine
starts (vLLM and its worker processes read it then), and keeps a value the user set. These
run without vLLM or CUDA; where vLLM is missing the backend is refused after the variable
is set, as on a GPU machine it would be set before the engine starts."""

from __future__ import annotations

import os

import pytest

from llm_agents.settings import VLLM_LOOPBACK_ENV, backend_unavailable, vllm_env
from llm_agents.team import backend_for


def test_the_env_given_to_vllm_binds_loopback_unless_the_user_set_it():
    assert VLLM_LOOPBACK_ENV == {"VLLM_HOST_IP": "127.0.0.1"}
    assert vllm_env({}) == {"VLLM_HOST_IP": "127.0.0.1"}
    assert vllm_env({"VLLM_HOST_IP": ""}) == {"VLLM_HOST_IP": "127.0.0.1"}  # vLLM: unset
    assert vllm_env({"VLLM_HOST_IP": "10.1.2.3"}) == {}
    assert vllm_env({"PATH": "/usr/bin"}) == {"VLLM_HOST_IP": "127.0.0.1"}


@pytest.mark.skipif(backend_unavailable("vllm") is None,
                    reason="vllm and a GPU are here: building the backend would start it")
@pytest.mark.parametrize("user", [None, "", "10.1.2.3"])
def test_building_a_vllm_backend_sets_the_env_first(monkeypatch, user):
    """backend_for(..., "vllm") (Team.shared / Team.per_role / build_team's path) started
    vLLM with VLLM_HOST_IP unset, so its servers bound the machine's outward address."""
    if user is None:
        monkeypatch.delenv("VLLM_HOST_IP", raising=False)
    else:
        monkeypatch.setenv("VLLM_HOST_IP", user)
    with pytest.raises(ValueError, match="the vllm backend cannot run here"):
        backend_for("/nonexistent/model", None, "vllm")
    assert os.environ["VLLM_HOST_IP"] == (user or "127.0.0.1")


def test_a_transformers_backend_leaves_the_env_alone(monkeypatch, kuhn_tok, make_model):
    monkeypatch.delenv("VLLM_HOST_IP", raising=False)
    backend_for(make_model(kuhn_tok), kuhn_tok, "transformers")
    assert "VLLM_HOST_IP" not in os.environ
